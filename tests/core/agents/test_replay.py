"""Tests for decisions.core.agents.replay: circular buffer and n-step transitions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.agents.replay import NStepWindow, ReplayBuffer, Transition


def _items(start: int, count: int) -> dict[str, jax.Array]:
    """Items numbered ``start..start+count-1``: a scalar id and a vector derived from it."""
    ids = jnp.arange(start, start + count, dtype=jnp.int32)
    return {"id": ids, "vec": jnp.stack([ids * 1.0, ids * -2.0], axis=1).astype(jnp.float32)}


def _example() -> dict[str, jax.Array]:
    return {"id": jnp.int32(0), "vec": jnp.zeros(2, jnp.float32)}


def test_create_is_empty_and_typed() -> None:
    buffer = ReplayBuffer.create(_example(), 5)
    assert buffer.capacity == 5
    assert int(buffer.size) == 0 and int(buffer.position) == 0
    assert buffer.data["id"].shape == (5,) and buffer.data["id"].dtype == jnp.int32
    assert buffer.data["vec"].shape == (5, 2) and buffer.data["vec"].dtype == jnp.float32


@pytest.mark.parametrize("capacity", [0, -1, 2.5, True])
def test_create_rejects_bad_capacity(capacity) -> None:
    with pytest.raises(ValueError, match="^capacity:"):
        ReplayBuffer.create(_example(), capacity)


def test_add_fills_in_order_then_wraps_over_the_oldest() -> None:
    buffer = ReplayBuffer.create(_example(), 5)
    buffer = buffer.add(_items(0, 3))
    assert int(buffer.size) == 3 and int(buffer.position) == 3
    np.testing.assert_array_equal(buffer.data["id"][:3], [0, 1, 2])
    buffer = buffer.add(_items(3, 3))  # 3, 4 fill the end; 5 overwrites slot 0 (item 0, the oldest)
    assert int(buffer.size) == 5 and int(buffer.position) == 1
    np.testing.assert_array_equal(buffer.data["id"], [5, 1, 2, 3, 4])
    np.testing.assert_array_equal(buffer.data["vec"][0], [5.0, -10.0])
    buffer = buffer.add(_items(6, 5))  # a full lap: slots 1..4 then 0
    np.testing.assert_array_equal(buffer.data["id"], [10, 6, 7, 8, 9])
    assert int(buffer.size) == 5 and int(buffer.position) == 1


def test_add_rejects_a_batch_larger_than_the_buffer() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        ReplayBuffer.create(_example(), 2).add(_items(0, 3))


def test_sample_draws_uniformly_from_filled_slots_only() -> None:
    buffer = ReplayBuffer.create(_example(), 8).add(_items(100, 4))
    batch = jax.jit(lambda b, k: b.sample(k, 4000))(buffer, jax.random.PRNGKey(0))
    ids = np.asarray(batch["id"])
    assert set(np.unique(ids)) == {100, 101, 102, 103}  # never an empty slot
    np.testing.assert_array_equal(np.asarray(batch["vec"])[:, 0], ids * 1.0)  # leaves stay paired
    counts = np.bincount(ids - 100, minlength=4)
    # 4000 draws from 4 items: each count ~ Binomial(4000, 1/4), sd ~27; 5 sd bounds.
    assert np.all(np.abs(counts - 1000) < 140), counts


def test_jitted_scan_of_adds_matches_python_adds() -> None:
    def body(buffer: ReplayBuffer, start: jax.Array) -> tuple[ReplayBuffer, None]:
        ids = start + jnp.arange(3, dtype=jnp.int32)
        items = {"id": ids, "vec": jnp.stack([ids * 1.0, ids * -2.0], axis=1).astype(jnp.float32)}
        return buffer.add(items), None

    starts = jnp.arange(0, 12, 3, dtype=jnp.int32)
    scanned, _ = jax.jit(lambda b: jax.lax.scan(body, b, starts))(ReplayBuffer.create(_example(), 7))
    python = ReplayBuffer.create(_example(), 7)
    for start in range(0, 12, 3):
        python = python.add(_items(start, 3))
    for a, b in zip(jax.tree.leaves(scanned), jax.tree.leaves(python), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert int(scanned.position) == 12 % 7 and int(scanned.size) == 7


GAMMA = 0.9


def _push(window: NStepWindow, t: int, *, terminated: bool = False, truncated: bool = False) -> NStepWindow:
    """Push step ``t`` of one environment: obs [t], action t, reward t + 1, next obs [t + 0.5]."""
    return window.push(
        jnp.asarray([[float(t)]]),
        jnp.asarray([t], jnp.int32),
        jnp.asarray([t + 1.0]),
        jnp.asarray([[t + 0.5]]),
        jnp.asarray([terminated]),
        jnp.asarray([truncated]),
    )


def _one(transition: Transition) -> tuple[float, int, float, float, float]:
    return (
        float(transition.obs[0, 0]),
        int(transition.action[0]),
        float(transition.reward[0]),
        float(transition.next_obs[0, 0]),
        float(transition.discount[0]),
    )


def _empty(n: int) -> NStepWindow:
    return NStepWindow.create(jnp.zeros(1), jnp.int32(0), num_envs=1, n=n)


def test_one_step_terminated_does_not_bootstrap_truncated_does() -> None:
    window = _empty(1)
    assert _one(_push(window, 0).transition(GAMMA)) == pytest.approx((0.0, 0, 1.0, 0.5, GAMMA))
    assert _one(_push(window, 0, terminated=True).transition(GAMMA)) == pytest.approx((0.0, 0, 1.0, 0.5, 0.0))
    truncated = _push(window, 0, truncated=True).transition(GAMMA)
    assert _one(truncated) == pytest.approx((0.0, 0, 1.0, 0.5, GAMMA))  # bootstraps from the final obs
    both = _push(window, 0, terminated=True, truncated=True).transition(GAMMA)
    assert float(both.discount[0]) == 0.0


def test_n_step_sums_discounted_rewards_and_bootstraps_from_the_last_step() -> None:
    window = _empty(3)
    for t in range(3):
        window = _push(window, t)
    # Starts at step 0: rewards 1, 2, 3; bootstraps from step 2's next obs with gamma^3.
    expected = (0.0, 0, 1.0 + GAMMA * 2.0 + GAMMA**2 * 3.0, 2.5, GAMMA**3)
    assert _one(window.transition(GAMMA)) == pytest.approx(expected)
    window = _push(window, 3)
    assert _one(window.transition(GAMMA)) == pytest.approx(
        (1.0, 1, 2.0 + GAMMA * 3.0 + GAMMA**2 * 4.0, 3.5, GAMMA**3)
    )


@pytest.mark.parametrize(("terminated", "discount"), [(True, 0.0), (False, GAMMA**2)])
def test_n_step_is_cut_at_an_episode_end_inside_the_window(terminated: bool, discount: float) -> None:
    window = _empty(3)
    window = _push(window, 0)
    window = _push(window, 1, terminated=terminated, truncated=not terminated)  # episode ends here
    window = _push(window, 2)  # first step of the next episode: must not leak in
    expected = (0.0, 0, 1.0 + GAMMA * 2.0, 1.5, discount)
    assert _one(window.transition(GAMMA)) == pytest.approx(expected)
    # The transition starting at the ending step is a one-step one.
    window = _push(window, 3)
    assert _one(window.transition(GAMMA)) == pytest.approx((1.0, 1, 2.0, 1.5, 0.0 if terminated else GAMMA))


def test_window_handles_environments_independently() -> None:
    window = NStepWindow.create(jnp.zeros(1), jnp.int32(0), num_envs=2, n=2)
    for t in range(2):
        window = window.push(
            jnp.asarray([[t], [10.0 + t]]),
            jnp.asarray([t, 10 + t], jnp.int32),
            jnp.asarray([1.0, 5.0]),
            jnp.asarray([[t + 0.5], [10.5 + t]]),
            jnp.asarray([False, t == 0]),  # env 1 terminates at its first step
            jnp.asarray([False, False]),
        )
    out = window.transition(GAMMA)
    np.testing.assert_allclose(out.reward, [1.0 + GAMMA, 5.0])
    np.testing.assert_allclose(out.discount, [GAMMA**2, 0.0], rtol=1e-6)
    np.testing.assert_allclose(out.next_obs[:, 0], [1.5, 10.5])
    np.testing.assert_array_equal(out.action, [0, 10])
