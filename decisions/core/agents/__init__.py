"""Reinforcement-learning agents in JAX: PPO and A2C (on-policy), DQN and SAC (off-policy).

Every agent module has ``train(env, config, *, key, params=None, progress=None,
checkpoint=None) -> TrainResult``, ``train_seeds``, ``save_policy`` and ``load_policy`` (PPO and
A2C also take ``initial`` params). An agent is a frozen ``(config, policy)`` dataclass
implementing ``onpolicy.OnPolicyAgent`` or ``offpolicy.OffPolicyAgent``, run by its family's
``train_agent``. Adding an agent: ``docs/notes/core.md``.
"""
