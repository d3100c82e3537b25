"""Reinforcement-learning agents in JAX: PPO and A2C (on-policy), DQN and SAC (off-policy).

Every agent module (``ppo``, ``a2c``, ``dqn``, ``sac``) has the same contract for callers:
``train(env, config, *, key, params=None, progress=None, checkpoint=None) -> TrainResult``,
``train_seeds`` (several seeds at once), ``save_policy`` and ``load_policy`` (PPO and A2C
also take ``initial`` params to fine-tune).

Agents extend one way, in both families: an agent is a small frozen dataclass holding its
``config`` and its ``policy`` that implements its family's protocol, and the family's loop
takes it as a jit static argument. Configs hold settings only (fields, their checks and
values derived from them, such as an epsilon schedule), never an agent's behaviour.

- on-policy: ``onpolicy.OnPolicyAgent`` (``updates_per_iteration``, ``base_optimizer``,
  ``update`` of the network from one rollout batch), run by ``onpolicy.train_agent``;
- off-policy: ``offpolicy.OffPolicyAgent`` (``init``, ``explore``, ``update`` from one replay
  batch, ...), run by ``offpolicy.train_agent``.

Why a protocol rather than config subclasses: the agent needs the policy, which depends on
the environment's spaces, not only on the config; and a config whose base declares methods to
override mixes settings (checkpointed, compared on resume) with behaviour.

To add an agent, write a module that defines:

1. ``XConfig``, a frozen dataclass subclassing ``onpolicy.OnPolicyConfig`` or
   ``offpolicy.OffPolicyConfig`` with the agent's own fields, checked in ``__post_init__``;
2. ``XAgent``, a frozen dataclass ``(config, policy)`` with a ``kind: ClassVar[str]``
   (checkpoint tag) implementing the family's protocol (on-policy: subclassing
   ``onpolicy.ActorCriticAgent``; off-policy: its policy an ``offpolicy.NetworkPolicy``);
3. ``make_agent(env, config, params=None) -> XAgent`` (checks the config type and the spaces;
   on-policy: ``XAgent.for_env``);
4. ``train, train_seeds = <family>.trainers(...)``, which hand ``make_agent(env, config, params)``
   to the family's ``train_agent``; and re-export the family's ``save_policy`` and a
   ``load_policy`` (off-policy: ``XPolicy.load``).

Shared by both families: ``common`` (``TrainResult``, ``RunningStats``, field checks, the
chunked driver ``run_chunked`` with progress and checkpoint/resume, ``evaluate_episodes``),
``trainers`` (the ``train`` / ``train_seeds`` pair made from ``make_agent``), ``policy_file``
(what saving and loading a policy share) and ``replay`` (off-policy buffers).
"""
