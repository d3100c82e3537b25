"""What the off-policy agents (DQN, SAC) share, one module per job.

- ``config``: ``OffPolicyConfig``, the common, validated, hashable settings (and the clipped
  Adam every network trains with); each agent's config subclasses it to add its fields.
- ``agent``: ``OffPolicyAgent``, the protocol an agent implements (network init,
  exploration, one gradient update, the deterministic policy's params), and the observation
  helpers ``flatten_obs`` / ``normalize`` and the target update ``polyak_update``.
- ``loop``: ``train_agent`` / ``train_agent_seeds``, the whole jitted loop (vectorised
  collection, n-step replay, prefill, chunks with progress and checkpoint/resume).
- ``io``: ``save_policy`` / ``load_policy_as``, msgpack files holding the policy's weights,
  the observation statistics, its kind and its description.
"""

from decisions.core.agents.offpolicy.agent import OffPolicyAgent, flatten_obs, normalize, polyak_update
from decisions.core.agents.offpolicy.config import OffPolicyConfig
from decisions.core.agents.offpolicy.io import POLICY_FORMAT, load_policy_as, save_policy
from decisions.core.agents.offpolicy.loop import OffPolicyState, train_agent, train_agent_seeds
from decisions.core.agents.policy_file import PolicyDescription

__all__ = [
    "POLICY_FORMAT",
    "OffPolicyAgent",
    "OffPolicyConfig",
    "OffPolicyState",
    "PolicyDescription",
    "flatten_obs",
    "load_policy_as",
    "normalize",
    "polyak_update",
    "save_policy",
    "train_agent",
    "train_agent_seeds",
]
