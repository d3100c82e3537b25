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
- ``tasks``: network configurations (cells, users, scheduler, layout), training and unseen;
- ``experts``: per-task and multi-task PPO with the core agent, and policy evaluation;
- ``datasets``: offline trajectories of behaviour policies, on disk as ``.npz`` (no pickle);
- ``promptdt``: the Prompt Decision Transformer; ``dt_train``: its batching, training, rollouts;
- ``study``: experts -> offline data -> PromptDT, DT and multi-task PPO -> evaluation;
  ``job``: the ``comp`` batch job running its stages; ``trace``: episodes replayed for maps;
- ``bench``: simulator throughput, parity and the shipped study's figures.
"""

from decisions.telecom.comp.env import CompEnv, CompState
from decisions.telecom.comp.network import (
    MAX_CELLS,
    MAX_USERS,
    NetworkParams,
    large,
    make_network,
    medium,
    small,
)

__all__ = [
    "MAX_CELLS",
    "MAX_USERS",
    "CompEnv",
    "CompState",
    "NetworkParams",
    "large",
    "make_network",
    "medium",
    "small",
]
