"""Pharmaceutical 4-unit process chain (reactor, crystalliser, filter/wash, dryer) optimised with SNAPO.

Public API in ``decisions.health.pharma.api``; figures from ``decisions.health.pharma.bench``.
"""
