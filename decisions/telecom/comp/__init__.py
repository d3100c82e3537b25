"""Coordinated multi-point (CoMP) cell selection on a fast JAX multi-cell network simulator.

The simulator reproduces ``mobile-env``'s physics and defaults on padded arrays, so networks of 3-13
cells and 5-30 users ``jit``/``vmap`` together. Staged subpackages, each importing only lower ones:

- ``sim``: the network, channel, schedulers, QoE, mobility, ``CompEnv`` and the task catalogue;
- ``policies``: heuristics, the greedy planner, rollouts, PPO experts, multi-task PPO, warm starts;
- ``dt``: the Prompt Decision Transformer, its training, rollouts, datasets, model files and DAgger;
- ``study``: the study's budget, folder, stages and scoring, spread, DAgger ablation, parity, traces.

The domain's contract files sit on top: ``spec`` (validated job model, no JAX), ``job``, ``report``,
``bench`` and ``dagger_cli``; ``deployable`` and ``decide`` put a run's policies to work on today's
measurements. The shipped studies live outside the package (``study.folder.shipped_study``).
"""

from decisions.core.lazy import lazy_exports

# The public names by the module that defines each (imported on first use: the package stays light).
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "entry": ("DOMAIN",),
    "report": ("CompReport",),
    "sim.catalog": ("JOINT_TRAINING_TASKS", "JOINT_UNSEEN_TASKS", "TRAINING_TASKS", "UNSEEN_TASKS", "Task",
                    "task_by_name"),
    "sim.constants": ("MAX_CELLS", "MAX_USERS"),
    "sim.env": ("CompEnv", "CompState"),
    "sim.network": ("NetworkParams", "large", "make_network", "medium", "small"),
    "sim.qoe": ("RATE_COLUMNS",),
    "sim.settings": ("NetworkSettings",),
    "study.folder": ("joint_study", "shipped_study"),
    "study.trace": ("Trace", "available_policies", "policy_actions", "replay", "trace_frames"),
})
