"""Tests of the Prompt Decision Transformer for CoMP (tiny models, a few seconds each)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.telecom.comp.dt.dt_policy import make_dt_policy, rollout_return
from decisions.telecom.comp.dt.dt_train import (
    Trajectories,
    make_prompt,
    pack,
    returns_to_go,
    sample_batch,
    train_promptdt,
)
from decisions.telecom.comp.dt.promptdt import (
    N_ACTIONS,
    N_FEATURES,
    PromptDT,
    PromptDTConfig,
    Segment,
    count_params,
    init_params,
    size,
)
from decisions.telecom.comp.dt.saved import load_params, save_params
from decisions.telecom.comp.sim.constants import MAX_CELLS, MAX_USERS
from decisions.telecom.comp.sim.env import CompEnv
from decisions.telecom.comp.sim.network import small
from decisions.telecom.comp.sim.qoe import qoe

TINY = PromptDTConfig(
    embed_dim=32, n_layers=2, n_heads=2, dropout=0.0, context_len=4, prompt_len=3, max_ep_len=100
)
_apply = jax.jit(PromptDT(TINY).apply)  # one compile per input structure (with / without prompt)


def _random_segment(key: jax.Array, batch: int, length: int) -> Segment:
    k1, k2, k3 = jax.random.split(key, 3)
    return Segment(
        rtg=jax.random.normal(k1, (batch, length)),
        obs=jax.random.uniform(k2, (batch, length, MAX_USERS, N_FEATURES)),
        actions=jax.random.randint(k3, (batch, length, MAX_USERS), 0, N_ACTIONS),
        timesteps=jnp.broadcast_to(jnp.arange(length), (batch, length)),
        mask=jnp.ones((batch, length), bool),
    )


def _masks(n_users: tuple[int, ...], n_cells: tuple[int, ...]) -> tuple[jax.Array, jax.Array]:
    um = jnp.arange(MAX_USERS)[None] < jnp.asarray(n_users)[:, None]
    cm = jnp.arange(MAX_CELLS)[None] < jnp.asarray(n_cells)[:, None]
    return um, cm


def _random_params(config: PromptDTConfig, seed: int) -> dict:
    """Weights of ``init_params``' structure and shapes, drawn at random (no initialiser to compile): the
    properties tested here are the architecture's and the files', which hold whatever the weights."""
    shapes = jax.eval_shape(lambda: init_params(config, jax.random.PRNGKey(0)))
    rng = np.random.default_rng(seed)
    return jax.tree_util.tree_map(lambda x: jnp.asarray(rng.normal(0.0, 0.2, x.shape), x.dtype), shapes)


@pytest.fixture(scope="module")
def tiny_params() -> dict:
    return _random_params(TINY, 0)


def test_shapes_and_masking(tiny_params: dict) -> None:
    hist = _random_segment(jax.random.PRNGKey(1), 2, TINY.context_len)
    prompt = _random_segment(jax.random.PRNGKey(2), 2, TINY.prompt_len)
    um, cm = _masks((5, 30), (3, 13))
    for p in (prompt, None):
        logits = _apply(tiny_params, hist, um, cm, p)
        assert logits.shape == (2, TINY.context_len, MAX_USERS, MAX_CELLS + 1)
        greedy = np.asarray(jnp.argmax(logits, -1))
        assert np.all(greedy[0, :, 5:] == 0)  # padded users only keep
        assert np.all(greedy[0] <= 3)  # toggles of padded cells never chosen
        lg = np.asarray(logits)
        assert np.all(np.isneginf(lg[0, :, 5:, 1:])) and np.all(np.isfinite(lg[0, :, 5:, 0]))
        assert np.all(np.isneginf(lg[0, :, :5, 4:])) and np.all(np.isfinite(lg[0, :, :5, :4]))
        assert np.all(np.isfinite(lg[1]))  # the full network allows everything
    # the prompt matters
    with_p = _apply(tiny_params, hist, um, cm, prompt)
    without = _apply(tiny_params, hist, um, cm, None)
    assert not np.allclose(with_p[1], without[1])


def test_link_flags_are_ignored_unless_asked_for(tiny_params: dict) -> None:
    hist = _random_segment(jax.random.PRNGKey(1), 2, TINY.context_len)
    flipped = hist.replace(obs=hist.obs.at[..., :MAX_CELLS].set(1.0 - hist.obs[..., :MAX_CELLS]))
    um, cm = _masks((30, 30), (13, 13))
    np.testing.assert_array_equal(_apply(tiny_params, hist, um, cm, None), _apply(tiny_params, flipped, um, cm, None))
    linked = dataclasses.replace(TINY, link_features=True)
    shapes = jax.eval_shape(lambda: init_params(linked, jax.random.PRNGKey(0)))
    # reading the flags adds no weights: TINY's parameters are the linked model's
    assert jax.tree_util.tree_map(jnp.shape, shapes) == jax.tree_util.tree_map(jnp.shape, tiny_params)
    apply_linked = jax.jit(PromptDT(linked).apply)  # one compile for both calls
    a = apply_linked(tiny_params, hist, um, cm, None)
    b = apply_linked(tiny_params, flipped, um, cm, None)
    assert not any(np.allclose(a[i], b[i]) for i in range(2))


def test_causality_and_padding(tiny_params: dict) -> None:
    hist = _random_segment(jax.random.PRNGKey(3), 2, TINY.context_len)
    prompt = _random_segment(jax.random.PRNGKey(4), 2, TINY.prompt_len)
    um, cm = _masks((7, 7), (4, 4))
    base = _apply(tiny_params, hist, um, cm, prompt)
    t = 1
    # the action at step t and everything later is the future of the state token at t
    changed = hist.replace(
        actions=hist.actions.at[:, t:].set((hist.actions[:, t:] + 1) % 5),
        obs=hist.obs.at[:, t + 1 :].add(0.5),
        rtg=hist.rtg.at[:, t + 1 :].add(3.0),
    )
    out = _apply(tiny_params, changed, um, cm, prompt)
    np.testing.assert_allclose(out[:, : t + 1], base[:, : t + 1], rtol=1e-5, atol=1e-5)
    assert not any(np.allclose(out[i, t + 1 :], base[i, t + 1 :]) for i in range(2))
    # changing the state at t changes the logits at t
    out2 = _apply(tiny_params, hist.replace(obs=hist.obs.at[:, t].add(0.5)), um, cm, prompt)
    assert not any(np.allclose(out2[i, t], base[i, t]) for i in range(2))
    # padded (masked) history steps do not influence real ones
    masked = hist.replace(mask=hist.mask.at[:, :2].set(False))
    a = _apply(tiny_params, masked, um, cm, prompt)
    b = _apply(tiny_params, masked.replace(obs=masked.obs.at[:, :2].add(1.0)), um, cm, prompt)
    np.testing.assert_allclose(a[:, 2:], b[:, 2:], rtol=1e-5, atol=1e-5)
    # padded users' features do not change the real users' logits
    c = _apply(tiny_params, hist.replace(obs=hist.obs.at[:, :, 10:].add(1.0)), um, cm, prompt)
    np.testing.assert_allclose(c[:, :, :7], base[:, :, :7], rtol=1e-5, atol=1e-5)


def _synthetic_task(rule: int, n: int, t_len: int, seed: int) -> Trajectories:
    """3 cells, 5 users. Unconnected users toggle their best-SNR cell (rule 0) or the next
    one (rule 1); connected users keep. States and rewards have the same distribution under
    both rules, so only (state, action) pairs, e.g. in a prompt, reveal the rule."""
    rng = np.random.default_rng(seed)
    n_cells, n_users = 3, 5
    obs = np.zeros((n, t_len, MAX_USERS, N_FEATURES), np.float32)
    best = rng.integers(0, n_cells, (n, t_len, n_users))
    snr = rng.uniform(0.0, 0.5, (n, t_len, n_users, n_cells))
    np.put_along_axis(snr, best[..., None], 1.0, axis=-1)
    connected = rng.random((n, t_len, n_users)) < 0.4
    serving = rng.integers(0, n_cells, (n, t_len, n_users))
    obs[:, :, :n_users, MAX_CELLS : MAX_CELLS + n_cells] = snr
    for c in range(n_cells):
        obs[:, :, :n_users, c] = connected & (serving == c)
    obs[:, :, :n_users, -1] = rng.uniform(-1, 1, (n, t_len, n_users))
    target = (best + rule) % n_cells
    actions = np.zeros((n, t_len, MAX_USERS), np.int32)
    actions[:, :, :n_users] = np.where(connected, 0, 1 + target)
    rewards = rng.uniform(0.0, 1.0, (n, t_len)).astype(np.float32)
    um = np.arange(MAX_USERS) < n_users
    cm = np.arange(MAX_CELLS) < n_cells
    return Trajectories(obs, actions, rewards, um, cm)


def _decision_accuracy(params: dict, config: PromptDTConfig, task: Trajectories, use_prompt: bool) -> float:
    """Greedy accuracy over unconnected users (the only ones whose action depends on the task)."""
    data = pack([task], config.n_demos)
    hist, prompt, um, cm = sample_batch(data, jax.random.PRNGKey(7), 256, config)
    logits = jax.jit(PromptDT(config).apply)(params, hist, um, cm, prompt if use_prompt else None)
    decide = (hist.actions > 0) & hist.mask[..., None]
    hit = (jnp.argmax(logits, -1) == hist.actions) & decide
    return float(jnp.sum(hit) / jnp.sum(decide))


@pytest.mark.slow
def test_prompt_reveals_the_task_dt_cannot() -> None:
    # K = 1: the history holds only the current state, so the task is in the prompt only. The tasks'
    # rule reads the connection flags (connected users keep), which the model drops unless asked.
    config = PromptDTConfig(
        embed_dim=64, n_layers=2, n_heads=2, dropout=0.0, context_len=1, prompt_len=4, max_ep_len=10,
        learning_rate=2e-3, warmup_steps=20, weight_decay=0.0, grad_clip=1.0, n_demos=4, link_features=True,
    )
    tasks = [_synthetic_task(0, 8, 10, seed=1), _synthetic_task(1, 8, 10, seed=2)]
    steps = 300
    p_params, p_metrics = train_promptdt(tasks, config, steps, batch_size=32, seed=0)
    d_params, d_metrics = train_promptdt(tasks, config, steps, batch_size=32, seed=0, use_prompt=False)
    test_tasks = [_synthetic_task(0, 4, 10, seed=11), _synthetic_task(1, 4, 10, seed=12)]
    p_acc = [_decision_accuracy(p_params, config, t, True) for t in test_tasks]
    d_acc = [_decision_accuracy(d_params, config, t, False) for t in test_tasks]
    print(f"promptdt {p_acc} dt {d_acc} compile {p_metrics['compile_s']:.1f}s {d_metrics['compile_s']:.1f}s")
    assert min(p_acc) > 0.9, p_acc
    assert np.mean(d_acc) < 0.65, d_acc  # chance between the two rules is 0.5
    assert np.all(np.isfinite(p_metrics["loss"])) and p_metrics["loss"][-1] < p_metrics["loss"][0]


USERS = dataclasses.replace(TINY, user_layers=1)
"""TINY with one transformer block over each step's users."""


def _permute_users(seg: Segment, order: np.ndarray) -> Segment:
    return seg.replace(obs=seg.obs[:, :, order], actions=seg.actions[:, :, order])


def test_user_layers_keep_the_model_equivariant_and_padding_inert() -> None:
    params = _random_params(USERS, 1)
    apply = jax.jit(PromptDT(USERS).apply)
    hist = _random_segment(jax.random.PRNGKey(7), 2, USERS.context_len)
    prompt = _random_segment(jax.random.PRNGKey(8), 2, USERS.prompt_len)
    um, cm = _masks((30, 30), (13, 13))
    base = apply(params, hist, um, cm, prompt)
    order = np.random.default_rng(0).permutation(MAX_USERS)
    moved = apply(params, _permute_users(hist, order), um, cm, _permute_users(prompt, order))
    np.testing.assert_allclose(moved, base[:, :, order], rtol=1e-4, atol=1e-5)
    # one user's logits depend on another user's features through the user block ...
    other = apply(params, hist.replace(obs=hist.obs.at[:, -1, 1].add(1.0)), um, cm, prompt)
    assert not any(np.allclose(other[i, -1, 0], base[i, -1, 0]) for i in range(2))
    # ... but never on padded users'
    um7, cm4 = _masks((7, 7), (4, 4))
    a = apply(params, hist, um7, cm4, prompt)
    b = apply(params, hist.replace(obs=hist.obs.at[:, :, 10:].add(1.0)), um7, cm4, prompt)
    np.testing.assert_allclose(a[:, :, :7], b[:, :, :7], rtol=1e-5, atol=1e-5)
    # slot ids make the model read the slot: the same permutation no longer commutes
    ids = dataclasses.replace(USERS, user_ids=True)
    p_ids = _random_params(ids, 2)
    apply_ids = jax.jit(PromptDT(ids).apply)  # one compile for both calls (op by op, each op compiles alone)
    c = apply_ids(p_ids, hist, um, cm, prompt)
    d = apply_ids(p_ids, _permute_users(hist, order), um, cm, _permute_users(prompt, order))
    permuted = np.asarray(c)[:, :, order]
    assert not any(np.allclose(np.asarray(d)[i], permuted[i], atol=1e-4) for i in range(2))


def test_save_load_round_trip(tmp_path, tiny_params: dict) -> None:
    path = tmp_path / "dt.msgpack"
    save_params(path, tiny_params, TINY)
    params, config = load_params(path)
    assert config == TINY
    hist = _random_segment(jax.random.PRNGKey(5), 2, TINY.context_len)
    prompt = _random_segment(jax.random.PRNGKey(6), 2, TINY.prompt_len)
    um, cm = _masks((5, 30), (3, 13))
    a = _apply(tiny_params, hist, um, cm, prompt)
    b = jax.jit(PromptDT(config).apply)(params, hist, um, cm, prompt)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(ValueError, match="not a Prompt-DT"):
        from decisions.core.checkpoint import save_pytree

        save_pytree(tmp_path / "other.msgpack", tiny_params)
        load_params(tmp_path / "other.msgpack")
    # half-precision storage: half the file, float32 weights back, each within float16 rounding
    half = tmp_path / "half.msgpack"
    save_params(half, tiny_params, TINY, weights_dtype="float16")
    restored, _ = load_params(half)
    assert half.stat().st_size < 0.6 * path.stat().st_size
    for x, y in zip(jax.tree_util.tree_leaves(tiny_params), jax.tree_util.tree_leaves(restored), strict=True):
        assert y.dtype == jnp.float32
        np.testing.assert_allclose(np.asarray(y), np.asarray(x), rtol=1e-3, atol=1e-4)
    with pytest.raises(ValueError, match="weights_dtype"):
        save_params(tmp_path / "bad.msgpack", tiny_params, TINY, weights_dtype="int8")


def test_rollout_on_comp_env(tiny_params: dict) -> None:
    net = small()  # a full 100-step episode
    env = CompEnv(action_mode="serving_set")
    reset, step = jax.jit(env.reset), jax.jit(env.step)  # one compile each, not one per operation
    # a demonstration from the environment itself (random actions) for the prompt
    obs, state = reset(jax.random.PRNGKey(0), net)
    obs_l, act_l, rew_l = [], [], []
    key = jax.random.PRNGKey(1)
    for _ in range(TINY.prompt_len):
        key, k1, k2 = jax.random.split(key, 3)
        a = jnp.where(net.user_mask, jax.random.randint(k1, (MAX_USERS,), 0, 4), 0)
        obs_l.append(np.asarray(obs).reshape(MAX_USERS, N_FEATURES))
        act_l.append(np.asarray(a))
        obs, state, r, *_ = step(k2, state, a, net)
        rew_l.append(float(r))
    demo = Trajectories(
        np.stack(obs_l)[None],
        np.stack(act_l)[None].astype(np.int32),
        np.asarray(rew_l, np.float32)[None],
        np.asarray(net.user_mask),
        np.asarray(net.cell_mask),
    )
    prompt = make_prompt(demo, TINY)
    np.testing.assert_allclose(prompt.rtg * TINY.rtg_scale, returns_to_go(demo.rewards[0]), rtol=1e-5)
    rollout = jax.jit(make_dt_policy(tiny_params, TINY, prompt, target_return=50.0))
    out = rollout(jax.random.PRNGKey(2), net)
    assert out.rewards.shape == (100,) and out.actions.shape == (100, MAX_USERS)
    assert np.isfinite(float(out.ret))
    assert np.all(np.asarray(out.actions)[:, 5:] == 0) and np.all(np.asarray(out.actions) <= 3)
    # the recorded user rates are the ones each step's reward came from (the scaled utility, averaged
    # over the real users); padded users have none
    rates = np.asarray(out.user_rate)
    assert rates.shape == (100, MAX_USERS) and np.all(rates[:, 5:] == 0)
    from_rates = 2.0 * np.asarray(qoe(jnp.asarray(rates[:, :5]), net.utility_bounds, net.utility_coeffs)).mean(axis=1) - 1
    np.testing.assert_allclose(from_rates, np.asarray(out.rewards), atol=1e-5)
    rets = rollout_return(tiny_params, TINY, net, None, 50.0, jax.random.PRNGKey(3), num_episodes=2)
    assert rets.shape == (2,) and np.all(np.isfinite(np.asarray(rets)))
    assert np.all(np.abs(np.asarray(rets)) <= 100.0 + 1e-4)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("embed_dim", 0),
        ("n_heads", 3),
        ("dropout", 1.0),
        ("context_len", 0),
        ("prompt_len", -1),
        ("max_ep_len", 1.5),
        ("rtg_scale", 0.0),
        ("learning_rate", -1.0),
        ("n_demos", 0),
        ("link_features", "yes"),
        ("user_layers", -1),
        ("user_ids", 1),
    ],
)
def test_bad_config_names_the_field(field: str, value: object) -> None:
    expected = "embed_dim" if field == "n_heads" else field
    with pytest.raises(ValueError, match=f"^{expected}:"):
        PromptDTConfig(**{field: value})


def test_size_presets() -> None:
    counts = [
        count_params(jax.eval_shape(lambda n=n: init_params(size(n), jax.random.PRNGKey(0))))
        for n in ("small", "medium", "large")
    ]
    assert counts[0] < counts[1] < counts[2]
    with pytest.raises(ValueError, match="^size:"):
        size("huge")


def test_bad_datasets_raise() -> None:
    task = _synthetic_task(0, 2, 5, seed=0)
    with pytest.raises(ValueError, match="^datasets:"):
        pack([task._replace(actions=task.actions[:, :, :3])], 2)
    with pytest.raises(ValueError, match="^steps:"):
        train_promptdt([task], TINY, 0)
