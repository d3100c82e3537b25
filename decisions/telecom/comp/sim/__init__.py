"""The CoMP simulator (lowest stage): networks, channel, schedulers, QoE, mobility, ``CompEnv`` and the task catalogue.

Imports nothing else of ``comp``; ``constants`` and ``catalog`` load no JAX (the job's spec reads them).
"""
