"""What the on-policy actor-critic agents (PPO, A2C) share, one module per job.

- ``config``: ``OnPolicyConfig``, the common, validated, hashable configuration; each agent's
  config subclasses it to add its fields.
- ``agent``: ``OnPolicyAgent``, the protocol an agent implements (its update of the network
  from one rollout batch, its optimiser), ``ActorCriticAgent``, the base giving an agent its
  ``for_env`` (its module's ``make_agent``), and the learning-rate ``schedule`` and clipped
  ``optimizer`` every agent gets.
- ``networks``: ``ActorCritic`` (separate actor and critic MLPs) and ``SetActorCritic``
  (the same over a set of exchangeable units).
- ``policy``: ``ActorCriticPolicy``, the static, hashable policy description with its
  observation encoding and action distributions (categorical, multi-categorical, Gaussian).
- ``losses``: ``gae`` (generalised advantage estimation keeping terminations and truncations
  apart), ``Batch``, ``surrogate_loss`` (clipped for PPO, plain for A2C) and ``gradient_step``.
- ``loop``: ``train_agent``, the whole jitted training loop (rollout, advantages, the agent's
  update, chunks with progress and checkpoint/resume), for one seed or several at once, and
  ``trainers``, an agent module's ``train`` / ``train_seeds`` made from it.
- ``host_loop``: ``train_agent_host``, the same loop for host environments
  (``core.host_envs.MultiAgentVecEnv``: simulators outside JAX, collected in Python) with
  action masks, and ``policy_actions``, the trained policy's (masked) actions on numpy arrays.
- ``io``: ``save_policy`` / ``write_policy`` / ``load_policy``, msgpack files holding the
  network weights, the observation statistics and the policy's description.
"""

from decisions.core.agents.onpolicy.agent import ActorCriticAgent, OnPolicyAgent, optimizer, schedule
from decisions.core.agents.onpolicy.config import ACTIVATIONS, LR_SCHEDULES, OnPolicyConfig
from decisions.core.agents.onpolicy.host_loop import policy_actions, train_agent_host
from decisions.core.agents.onpolicy.io import POLICY_FORMAT, load_policy, save_policy, write_policy
from decisions.core.agents.onpolicy.loop import OnPolicyState, train_agent, trainers
from decisions.core.agents.onpolicy.losses import Batch, gae, gradient_step, surrogate_loss
from decisions.core.agents.onpolicy.networks import ActorCritic, SetActorCritic
from decisions.core.agents.onpolicy.policy import ActorCriticPolicy

__all__ = [
    "ACTIVATIONS",
    "LR_SCHEDULES",
    "POLICY_FORMAT",
    "ActorCritic",
    "ActorCriticAgent",
    "ActorCriticPolicy",
    "Batch",
    "OnPolicyAgent",
    "OnPolicyConfig",
    "OnPolicyState",
    "SetActorCritic",
    "gae",
    "gradient_step",
    "load_policy",
    "optimizer",
    "policy_actions",
    "save_policy",
    "schedule",
    "surrogate_loss",
    "train_agent",
    "train_agent_host",
    "trainers",
    "write_policy",
]
