"""Off-policy estimators: hand-computed values, unbiasedness, exact identities, bootstrap, validation."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.errors import InputError
from decisions.recsys.utility import ope

# A tiny log worked out by hand: 4 rounds, 2 actions, a uniform logger (p = 0.5), 2 objectives.
#   round:            0        1        2         3
#   logged action:    0        1        1         0
#   target pi(.|x):   (1, 0)   (0, 1)   (.5, .5)  (1, 0)   -> w = pi(a_i) / 0.5 = (2, 2, 1, 2)
#   reward 1:         1        0        1         0
#   reward 2:         2        4        0         0
#   q_hat 1 (a0, a1): (.5, .25) every round -> q_logged = (.5, .25, .25, .5), q_policy = (.5, .25, .375, .5)
#   q_hat 2:          1 for both actions    -> q_logged = q_policy = 1
# Objective 1: IPS = (2 + 0 + 1 + 0) / 4 = 0.75; SNIPS = 3 / 7; DM = 1.625 / 4 = 0.40625;
#   DR = DM + (2 * .5 + 2 * -.25 + 1 * .75 + 2 * -.5) / 4 = 0.40625 + 0.0625 = 0.46875;
#   Switch-DR (tau = 1.5, keeps round 2 only) = 0.40625 + 0.75 / 4 = 0.59375.
# Objective 2: IPS = (4 + 8) / 4 = 3; SNIPS = 12 / 7; DM = 1; DR = 1 + (2 + 6 - 1 - 2) / 4 = 2.25;
#   Switch-DR (tau = 1.5) = 1 + (1 * -1) / 4 = 0.75.
REWARDS = np.array([[1.0, 2.0], [0.0, 4.0], [1.0, 0.0], [0.0, 0.0]])
ACTIONS = np.array([0, 1, 1, 0])
PROPENSITY = np.full(4, 0.5)
TARGET = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [1.0, 0.0]])
Q_HAT = np.stack([np.tile([0.5, 0.25], (4, 1)), np.ones((4, 2))], axis=-1)  # (n, A, M)
EXPECTED = {
    "ips": (0.75, 3.0),
    "snips": (3 / 7, 12 / 7),
    "dm": (0.40625, 1.0),
    "dr": (0.46875, 2.25),
    "switch_dr": (0.59375, 0.75),
}


def _tiny() -> ope.OpeInputs:
    return ope.OpeInputs.from_policy(REWARDS, ACTIONS, PROPENSITY, TARGET, Q_HAT)


def test_hand_computed_values() -> None:
    inputs = _tiny()
    np.testing.assert_allclose(inputs.weights, [2.0, 2.0, 1.0, 2.0])
    np.testing.assert_allclose(inputs.q_policy[:, 0], [0.5, 0.25, 0.375, 0.5])
    estimates = ope.estimate_all(inputs, tau=1.5)
    assert tuple(estimates) == ope.ESTIMATORS
    for name, expected in EXPECTED.items():
        np.testing.assert_allclose(estimates[name], expected, rtol=1e-6, err_msg=name)


def test_one_objective_rewards_and_pure_functions() -> None:
    inputs = ope.OpeInputs.from_policy(REWARDS[:, 0], ACTIONS, PROPENSITY, TARGET, Q_HAT[:, :, 0])
    assert inputs.rewards.shape == (4, 1)
    np.testing.assert_allclose(ope.estimate_all(inputs, tau=1.5)["dr"], [0.46875])
    r, w = jnp.asarray(REWARDS[:, 0]), inputs.weights  # (n,) rewards give scalars
    assert ope.ips(r, w).shape == ()
    np.testing.assert_allclose(ope.snips(r, w), 3 / 7, rtol=1e-6)
    jitted = jax.jit(ope.switch_dr)(inputs.rewards, w, inputs.q_logged, inputs.q_policy, 1.5)
    np.testing.assert_allclose(jitted, [0.59375])


def _bandit_log(key: jax.Array, n: int) -> tuple[jax.Array, jax.Array]:
    """A 3-armed Bernoulli bandit: logger (.5, .3, .2), target (.2, .3, .5), means (.1, .5, .8)."""
    logger = jnp.array([0.5, 0.3, 0.2])
    target = jnp.array([0.2, 0.3, 0.5])
    means = jnp.array([0.1, 0.5, 0.8])
    k_action, k_reward = jax.random.split(key)
    actions = jax.random.choice(k_action, 3, (n,), p=logger)
    rewards = jax.random.bernoulli(k_reward, means[actions]).astype(jnp.float32)
    return rewards, target[actions] / logger[actions]


TRUTH = 0.2 * 0.1 + 0.3 * 0.5 + 0.5 * 0.8  # 0.57


def test_ips_is_unbiased_over_replications() -> None:
    keys = jax.random.split(jax.random.key(1), 4000)

    def one(key: jax.Array) -> jax.Array:
        rewards, weights = _bandit_log(key, 100)
        return ope.ips(rewards, weights)

    estimates = np.asarray(jax.vmap(one)(keys))
    stderr = estimates.std(ddof=1) / np.sqrt(estimates.size)
    assert abs(estimates.mean() - TRUTH) < 4 * stderr


def test_snips_and_dr_are_consistent() -> None:
    rewards, weights = _bandit_log(jax.random.key(2), 200_000)
    q_logged = jnp.full_like(rewards, 0.3)  # a wrong reward model: DM is off by a lot
    q_policy = jnp.full_like(rewards, 0.3)
    assert abs(float(ope.snips(rewards, weights)) - TRUTH) < 0.01
    assert abs(float(ope.dr(rewards, weights, q_logged, q_policy)) - TRUTH) < 0.01
    assert abs(float(ope.dm(q_policy)) - TRUTH) > 0.2


def _random_inputs(seed: int, n: int = 50, n_actions: int = 4) -> ope.OpeInputs:
    rng = np.random.default_rng(seed)
    logger = rng.dirichlet(np.ones(n_actions), size=n)
    actions = np.array([rng.choice(n_actions, p=p) for p in logger])
    target = rng.dirichlet(np.ones(n_actions), size=n)
    rewards = rng.normal(size=(n, 2))
    q_hat = rng.normal(size=(n, n_actions, 2))
    return ope.OpeInputs.from_policy(rewards, actions, logger[np.arange(n), actions], target, q_hat)


def test_exact_identities() -> None:
    inputs = _random_inputs(3)
    r, w, q_log, q_pol = inputs
    zero = jnp.zeros_like(r)
    np.testing.assert_allclose(ope.dr(r, w, zero, zero), ope.ips(r, w), rtol=1e-6)  # q_hat = 0: DR is IPS
    np.testing.assert_allclose(ope.switch_dr(r, w, q_log, q_pol, 1e9), ope.dr(r, w, q_log, q_pol), rtol=1e-6)
    np.testing.assert_allclose(ope.switch_dr(r, w, q_log, q_pol, 1e-9), ope.dm(q_pol), rtol=1e-6)
    unit = w / jnp.mean(w)  # weights averaging 1: SNIPS is IPS
    np.testing.assert_allclose(ope.snips(r, unit), ope.ips(r, unit), rtol=1e-5)


def test_deterministic_target_as_one_hot() -> None:
    # A deterministic target (always action 1) on the tiny log: only round 1 matches, w = 2 there.
    one_hot = np.tile([0.0, 1.0], (4, 1))
    inputs = ope.OpeInputs.from_policy(REWARDS, ACTIONS, PROPENSITY, one_hot, Q_HAT)
    np.testing.assert_allclose(inputs.weights, [0.0, 2.0, 2.0, 0.0])
    np.testing.assert_allclose(ope.estimate_all(inputs)["ips"], [(0 + 2) / 4, (8 + 0) / 4])


def test_bootstrap_contains_estimate_and_shrinks_with_n() -> None:
    widths = []
    for n in (500, 20_000):
        rewards, weights = _bandit_log(jax.random.key(n), n)
        zeros = np.zeros(n)
        inputs = ope.OpeInputs.of(np.asarray(rewards), np.asarray(weights), zeros, zeros)
        estimates = ope.estimate_all(inputs)
        intervals = ope.bootstrap(inputs, jax.random.key(0), n_boot=200)
        for name in ("ips", "snips", "dr"):
            low, high = intervals[name]
            assert float(low[0]) <= float(estimates[name][0]) <= float(high[0]), name
        widths.append(float(intervals["ips"][1][0] - intervals["ips"][0][0]))
    assert widths[1] < widths[0] / 3  # ~ sqrt(40) = 6.3 times narrower


def test_bootstrap_chunks_give_the_same_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    inputs = _random_inputs(4)
    whole = ope.bootstrap_draws(inputs, jax.random.key(5), n_boot=12)
    monkeypatch.setattr(ope, "_BOOTSTRAP_ELEMENTS", 5 * inputs.n)  # 5 resamples per chunk
    chunked = ope.bootstrap_draws(inputs, jax.random.key(5), n_boot=12)
    for name in ope.ESTIMATORS:
        assert chunked[name].shape == (12, 2)
        np.testing.assert_allclose(chunked[name], whole[name], rtol=1e-6)


def test_bootstrap_mean_brackets_the_mean() -> None:
    values = np.r_[np.ones(30), np.zeros(70)]
    low, high = ope.bootstrap_mean(values, jax.random.key(0), n_boot=200)
    assert low < 0.3 < high
    assert 0.15 < low and high < 0.45


def test_summary_table() -> None:
    table = ope.summary_table(_tiny(), n_boot=20, tau=1.5, truth=[0.5, 2.0], objectives=["click", "value"])
    assert list(table.columns) == ["estimator", "objective", "estimate", "ci_low", "ci_high", "truth", "rel_error"]
    assert len(table) == 2 * len(ope.ESTIMATORS)
    dr_value = table[(table.estimator == "dr") & (table.objective == "value")].iloc[0]
    assert dr_value.estimate == pytest.approx(2.25)
    assert dr_value.rel_error == pytest.approx(0.125)  # |2.25 - 2| / 2
    assert "truth" not in ope.summary_table(_tiny(), n_boot=5).columns


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"logged_propensity": np.array([0.5, 0.0, 0.5, 0.5])}, "logged_propensity"),
        ({"logged_propensity": np.array([0.5, 0.5, 1.2, 0.5])}, "logged_propensity"),
        ({"rewards": np.array([[1.0, 2.0], [np.nan, 4.0], [1.0, 0.0], [0.0, 0.0]])}, "rewards"),
        ({"actions": np.array([0, 1, 2, 0])}, "actions"),
        ({"actions": np.array([0, 1, 1])}, "actions"),
        ({"target_probs": np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.6], [1.0, 0.0]])}, "target_probs"),
        ({"q_hat": np.ones((4, 2, 3))}, "q_hat"),
    ],
)
def test_bad_policy_inputs_name_the_field(change: dict, field: str) -> None:
    args = {"rewards": REWARDS, "actions": ACTIONS, "logged_propensity": PROPENSITY, "target_probs": TARGET,
            "q_hat": Q_HAT} | change
    with pytest.raises(InputError) as info:
        ope.OpeInputs.from_policy(**args)
    assert info.value.field == field


def test_bad_arrays_and_settings_name_the_field() -> None:
    ones = np.ones(4)
    with pytest.raises(InputError, match="row 2") as info:
        ope.OpeInputs.of(np.array([0.0, 1.0, np.inf, 0.0]), ones, ones, ones)
    assert info.value.field == "rewards"
    with pytest.raises(InputError) as info:
        ope.OpeInputs.of(ones, np.ones(3), ones, ones)
    assert info.value.field == "weights"
    with pytest.raises(InputError) as info:
        ope.OpeInputs.of(ones, ones, np.ones((4, 2)), ones)
    assert info.value.field == "q_logged"
    inputs = _tiny()
    for kwargs, field in (({"tau": 0.0}, "tau"), ({"n_boot": 0}, "n_boot"), ({"level": 1.0}, "level")):
        with pytest.raises(InputError) as info:
            ope.bootstrap(inputs, jax.random.key(0), **kwargs)
        assert info.value.field == field
    with pytest.raises(InputError) as info:
        ope.summary_table(inputs, n_boot=5, truth=[1.0])
    assert info.value.field == "truth"
