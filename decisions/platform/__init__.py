"""The platform: the registry of domains, running and recording their jobs, and the benchmarks.

Domains never import this package: they build on ``decisions.kit``.
"""
