"""What the off-policy agents (DQN, SAC) share, one module per job.

- ``config``: ``OffPolicyConfig``, the common, validated, hashable settings (and the clipped
  Adam every network trains with); each agent's config subclasses it to add its fields.
- ``agent``: ``OffPolicyAgent``, the protocol an agent implements (network init,
  exploration, one gradient update, the deterministic policy's params), ``NetworkPolicy``,
  the base of its deterministic policy (params init, observation features, ``load``), and the
  observation helpers ``flatten_obs`` / ``normalize``, one optimiser step ``gradient_update`` and
  the target update ``polyak_update``.
- ``loop``: ``train_agent``, the whole jitted loop (vectorised collection, n-step replay,
  prefill, chunks with progress and checkpoint/resume), for one seed or several at once, and
  ``trainers``, an agent module's ``train`` / ``train_seeds`` made from it.
- ``io``: ``save_policy`` / ``load_policy_as``, msgpack files holding the policy's weights,
  the observation statistics, its kind and its description.
"""

from decisions.core.agents.offpolicy.agent import (
    NetworkPolicy,
    OffPolicyAgent,
    flatten_obs,
    gradient_update,
    normalize,
    polyak_update,
)
from decisions.core.agents.offpolicy.config import OffPolicyConfig
from decisions.core.agents.offpolicy.io import POLICY_FORMAT, load_policy_as, save_policy
from decisions.core.agents.offpolicy.loop import OffPolicyState, train_agent, trainers
from decisions.core.agents.policy_file import PolicyDescription

__all__ = [
    "POLICY_FORMAT",
    "NetworkPolicy",
    "OffPolicyAgent",
    "OffPolicyConfig",
    "OffPolicyState",
    "PolicyDescription",
    "flatten_obs",
    "gradient_update",
    "load_policy_as",
    "normalize",
    "polyak_update",
    "save_policy",
    "train_agent",
    "trainers",
]
