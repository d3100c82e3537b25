"""The (Prompt-)Decision Transformers: model, training, rollouts, offline datasets, model files and DAgger.

Imports only ``comp.sim`` and ``comp.policies``; ``sizes`` loads no JAX.
"""
