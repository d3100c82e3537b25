"""Coordinated multi-point (CoMP) cell selection on a fast JAX multi-cell network simulator.

The simulator reproduces the physics and default configuration of the ``mobile-env``
package (Okumura-Hata channel, resource-fair scheduling, bounded log utility, random
waypoint mobility, central-agent toggle actions and reward) on padded arrays, so networks of
3-13 cells and 5-30 users ``jit``/``vmap`` together. The learning tasks use serving-set
actions (each user's number of strongest cells, see ``env``). Modules:

- ``network``: ``NetworkParams`` and the ``small``/``medium``/``large``/``make_network`` constructors;
- ``channel``: path loss, received power, SNR/SINR and link capacities;
- ``schedulers``: sharing a cell's resources among its connected users;
- ``qoe``: bounded log utility, QoE in [0, 1] and Jain's fairness index;
- ``mobility``: random waypoint movement;
- ``env``: ``CompEnv``, the functional environment;
- ``heuristics``: jit-able baseline policies (max-SNR, top-k, random, keep);
- ``parity``: statistical and step-level comparison against ``mobile-env``;
- ``catalog``: the tasks, network configurations (cells, users, scheduler, layout), training and
  unseen, with the constants they are made of (no JAX); ``tasks``: their traced features;
- ``experts``: per-task and multi-task PPO with the core agent, and policy evaluation;
- ``datasets``: offline trajectories of behaviour policies, on disk as ``.npz`` (no pickle);
- ``promptdt``: the Prompt Decision Transformer; ``dt_train``: its batching, training, rollouts;
- ``study``: experts -> offline data -> PromptDT, DT and multi-task PPO -> evaluation;
  ``scoring``: that evaluation (every policy on every task) and its headline figures;
  ``budget``: ``StudyBudget``, how much of each stage runs; ``folder``: a study folder's files;
  ``spec``: the job's validated model and ``prepare`` (no JAX); ``job``: the ``comp`` batch job
  running its stages; ``trace``: episodes replayed for maps;
- ``bench``: simulator throughput, parity and the shipped study's figures.
"""

from decisions.core.lazy import lazy_exports
from decisions.jobs.domain import Domain

# The public names by the module that defines each (imported on first use: the package stays light).
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "catalog": ("JOINT_TRAINING_TASKS", "JOINT_UNSEEN_TASKS", "MAX_CELLS", "MAX_USERS", "TRAINING_TASKS",
                "UNSEEN_TASKS", "Task", "task_by_name"),
    "env": ("CompEnv", "CompState"),
    "network": ("NetworkParams", "large", "make_network", "medium", "small"),
    "qoe": ("RATE_COLUMNS",),
    "report": ("CompReport",),
    "study": ("JOINT_STUDY", "SHIPPED_STUDY"),
    "trace": ("Trace", "available_policies", "policy_actions", "replay", "trace_frames"),
})

DOMAIN = Domain(
    name="comp",
    title="CoMP cell selection",
    package=__name__,
    summary="Choose each user's serving cells in a multi-cell network (PromptDT against baselines).",
    headline=("promptdt_vs_multitask_ppo", "unseen_normalised_vs_expert", "planner_vs_multitask_ppo"),
    example="comp_evaluate.toml",
    page="pages/6_CoMP_cell_selection.py",
    smoke_spec={
        "job": {"name": "smoke"},
        "study": {
            "folder": "comp_smoke",
            "stages": ["data"],
            "expert_steps": 3_200,
            "multitask_steps": 3_200,
            "episodes_per_behaviour": 2,
            "expert_episodes": 2,
            "demo_episodes": 2,
            "dt_steps": 3,
            "dt_batch": 4,
            "sizes": ["small"],
            "eval_episodes": 2,
            "select_episodes": 2,
        },
        "tasks": {"train": ["c3-u5-resource_fair-me"], "unseen": []},
    },
)
"""The CoMP domain's entry in ``decisions.jobs.registry``."""
