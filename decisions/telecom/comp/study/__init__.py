"""The CoMP study: its budget, folder, stages, scoring, spread, DAgger ablation, parity with mobile-env and traces.

The highest stage below the domain's contract files; ``budget`` and ``folder`` load no JAX.
"""
