"""Light presets of the CoMP PPO policies (no JAX): what a study budget validates before JAX loads."""

EXPERT_STEPS = 600_000
"""PPO environment steps of a per-task expert (``experts.EXPERT_CONFIG.total_env_steps``)."""
WARM_STARTS = ("none", "max_snr", "planner")
"""Warm starts of a PPO policy (``warm_start``): none, or the cloned demonstrator."""
