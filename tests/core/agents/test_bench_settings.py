"""The agents bench's settings reach both sides: every field of ``Hyperparameters`` and of
``DQNHyperparameters`` changes our config and the arguments rejax's agent is created with (but
the options rejax has not, which change ours only)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from decisions.core.agents import bench
from decisions.core.agents.bench_dqn import ours_dqn_config, rejax_dqn_trainer
from decisions.core.agents.bench_ours import shared_settings

# A valid value other than the default, for every setting.
PPO_OTHER: dict[str, Any] = {
    "num_envs": 8, "rollout_steps": 64, "epochs": 2, "minibatches": 2, "learning_rate": 1e-3, "gamma": 0.9,
    "gae_lambda": 0.9, "clip_eps": 0.1, "entropy_coef": 0.0, "value_coef": 1.0, "max_grad_norm": 1.0,
    "hidden": (32,), "activation": "relu", "normalize": True, "clip_value_loss": False,
}
DQN_OTHER: dict[str, Any] = {
    "num_envs": 8, "buffer_size": 5_000, "batch_size": 64, "learning_starts": 500, "learning_rate": 1e-3,
    "gamma": 0.9, "target_update_interval": 10, "tau": 0.5, "exploration_fraction": 0.3, "epsilon_start": 0.9,
    "epsilon_end": 0.1, "max_grad_norm": 1.0, "hidden": (32,), "loss": "huber", "grad_clip": "global_norm",
    "bootstrap_truncated": True,
}
PPO_OURS_ONLY = {"clip_value_loss"}  # rejax 0.1.3's PPO always clips its value loss
DQN_OURS_ONLY = {"loss", "grad_clip", "bootstrap_truncated"}  # rejax 0.1.3's DQN has no such option
STEPS = 8_192


def _names(settings_type: type) -> set[str]:
    return {field.name for field in dataclasses.fields(settings_type)}


def test_every_setting_has_another_value_to_try() -> None:
    assert set(PPO_OTHER) == _names(bench.Hyperparameters)
    assert set(DQN_OTHER) == _names(bench.DQNHyperparameters)


def test_shared_settings_passes_the_fields_named_alike() -> None:
    hp = bench.Hyperparameters(hidden=[32, 16])  # type: ignore[arg-type]  # a list, as a caller may pass
    shared = shared_settings(hp, bench.ppo.PPOConfig)
    assert set(shared) == _names(bench.Hyperparameters) - {"normalize"}
    assert shared["hidden"] == (32, 16) and shared["clip_eps"] == hp.clip_eps


def test_every_ppo_setting_reaches_our_config() -> None:
    base = bench.ours_config(bench.Hyperparameters(), STEPS)
    for name, value in PPO_OTHER.items():
        assert bench.ours_config(bench.Hyperparameters(**{name: value}), STEPS) != base, name


def test_every_dqn_setting_reaches_our_config() -> None:
    base = ours_dqn_config(bench.DQNHyperparameters(), 100_000)
    for name, value in DQN_OTHER.items():
        assert ours_dqn_config(bench.DQNHyperparameters(**{name: value}), 100_000) != base, name


class _Created(Exception):
    """Raised by the stand-in of rejax's ``create``, carrying its arguments."""

    def __init__(self, arguments: dict[str, Any]) -> None:
        super().__init__("created")
        self.arguments = arguments


def _peer_arguments(
    monkeypatch: pytest.MonkeyPatch, agent: str, trainer: Callable[..., Any], env: Any, hp: Any
) -> dict[str, Any]:
    """The arguments ``trainer`` creates rejax's ``agent`` with (nothing is built or trained)."""
    import rejax

    def create(**arguments: Any) -> None:
        raise _Created(arguments)

    monkeypatch.setattr(getattr(rejax, agent), "create", create)
    with pytest.raises(_Created) as created:
        trainer(env, hp, STEPS)
    return created.value.arguments


def test_every_ppo_setting_reaches_rejax_but_ours_only(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("rejax")
    from decisions.core.agents.gymnax_adapter import GymnaxEnv

    env = GymnaxEnv.make("CartPole-v1")
    base = _peer_arguments(monkeypatch, "PPO", bench.rejax_trainer, env, bench.Hyperparameters())
    unchanged: set[str] = set()
    for name, value in PPO_OTHER.items():
        hp = bench.Hyperparameters(**{name: value})
        if _peer_arguments(monkeypatch, "PPO", bench.rejax_trainer, env, hp) == base:
            unchanged.add(name)
    assert unchanged == PPO_OURS_ONLY


def test_every_dqn_setting_reaches_rejax_but_ours_only(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("rejax")
    from decisions.core.agents.gymnax_adapter import GymnaxEnv

    env = GymnaxEnv.make("CartPole-v1")
    base = _peer_arguments(monkeypatch, "DQN", rejax_dqn_trainer, env, bench.DQNHyperparameters())
    unchanged: set[str] = set()
    for name, value in DQN_OTHER.items():
        hp = bench.DQNHyperparameters(**{name: value})
        if name == "hidden":  # rejax's DQN has fixed widths: another is refused, not dropped
            with pytest.raises(ValueError, match="hidden"):
                rejax_dqn_trainer(env, hp, STEPS)
        elif _peer_arguments(monkeypatch, "DQN", rejax_dqn_trainer, env, hp) == base:
            unchanged.add(name)
    assert unchanged == DQN_OURS_ONLY
