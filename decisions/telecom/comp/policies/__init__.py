"""CoMP policies on the simulator: heuristics, the greedy planner, rollouts, PPO experts and multi-task PPO.

Imports only ``comp.sim``; ``presets`` loads no JAX.
"""
