"""Tests for decisions.core.snapo: convergence, sensitivities, progress, no re-trace, resume."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core import smooth
from decisions.core.checkpoint import load_metadata
from decisions.core.snapo import SnapoConfig, SnapoResult, train, value_and_sensitivities

TARGET = (0.2, -0.5, 1.5)
THETA_STAR = np.array([0.2, -0.5, 1.75])


def _capped_quadratic(theta, inputs, key, temperature):
    """``-w |theta - t|^2 + p sum softplus_T(theta - 1)``: deterministic, known optimum.

    With w = 1 and p = 0.5 the bonus only acts on components above 1, where the
    first-order condition ``-2 (theta - 1.5) + 0.5 = 0`` gives 1.75; elsewhere
    theta = t. So theta* = (0.2, -0.5, 1.75) up to exp(-0.8 / T) terms.
    """
    del key
    fit = -inputs["weight"] * jnp.sum(jnp.square(theta - inputs["target"]))
    return fit + inputs["price"] * jnp.sum(smooth.smooth_relu(theta - 1.0, temperature))


def _analytic_sensitivities(theta: np.ndarray, inputs: dict, temperature: float) -> dict:
    t, w = np.asarray(inputs["target"]), float(inputs["weight"])
    return {
        "target": 2.0 * w * (theta - t),
        "weight": -np.sum((theta - t) ** 2),
        "price": np.sum(temperature * np.logaddexp(0.0, (theta - 1.0) / temperature)),
    }


def _noisy_quadratic(theta, inputs, key, temperature):
    """``E[-|theta - t - eps|^2]`` over 64 fresh normal draws: optimum theta = t."""
    del temperature
    eps = 0.3 * jax.random.normal(key, (64, theta.shape[0]), theta.dtype)
    return -jnp.mean(jnp.sum(jnp.square(theta - inputs["target"] - eps), axis=-1))


X64_CONFIG = SnapoConfig(steps=400, learning_rate=0.05, warmup_steps=10, log_every=100)


@pytest.fixture(scope="module")
def x64_run() -> tuple[SnapoResult, dict]:
    with jax.enable_x64(True):
        inputs = {
            "target": jnp.asarray(TARGET, jnp.float64),
            "weight": jnp.asarray(1.0, jnp.float64),
            "price": jnp.asarray(0.5, jnp.float64),
        }
        result = train(
            _capped_quadratic, jnp.zeros(3, jnp.float64), inputs, X64_CONFIG, key=jax.random.PRNGKey(0)
        )
    return result, inputs


def test_converges_to_known_optimum(x64_run) -> None:
    result, _ = x64_run
    np.testing.assert_allclose(np.asarray(result.params), THETA_STAR, atol=1e-2)
    assert result.param_grad_norm < 0.05
    assert result.value == pytest.approx(-(0.25**2) + 0.5 * 0.75, abs=1e-3)
    assert len(result.log.value) == X64_CONFIG.steps
    assert float(result.log.value[-1]) > float(result.log.value[0])


def test_log_temperature_anneals_geometrically(x64_run) -> None:
    log = x64_run[0].log
    temps = np.asarray(log.temperature)
    assert temps[0] == pytest.approx(X64_CONFIG.temperature_start, rel=1e-6)
    assert temps[-1] == pytest.approx(X64_CONFIG.temperature_end, rel=1e-5)
    assert np.all(np.diff(temps) < 0)
    ratios = temps[1:] / temps[:-1]
    np.testing.assert_allclose(ratios, ratios[0], rtol=1e-4)
    curve = x64_run[0].curve()
    assert list(curve.columns) == ["step", "value", "grad_norm", "temperature"] and len(curve) == 400


def test_sensitivities_match_analytic_and_central_differences(x64_run) -> None:
    result, inputs = x64_run
    temperature = float(result.log.temperature[-1])  # the final temperature used for the report
    with jax.enable_x64(True):
        theta = np.asarray(result.params)
        analytic = _analytic_sensitivities(theta, inputs, temperature)
        sens = {k: np.asarray(v) for k, v in result.sensitivities.items()}
        assert sens["target"].dtype == np.float64
        for name in ("target", "weight", "price"):
            np.testing.assert_allclose(sens[name], analytic[name], rtol=1e-9, atol=1e-12, err_msg=name)

        key, h = jax.random.PRNGKey(5), 1e-6

        def value_at(x: dict) -> float:
            return float(_capped_quadratic(result.params, x, key, jnp.float64(temperature)))

        for name, base in inputs.items():
            flat = np.asarray(base, np.float64).ravel()
            fd = np.empty_like(flat)
            for i in range(flat.size):
                bumped = [flat.copy(), flat.copy()]
                bumped[0][i] += h
                bumped[1][i] -= h
                up, down = (
                    value_at({**inputs, name: jnp.asarray(b.reshape(np.shape(base)))}) for b in bumped
                )
                fd[i] = (up - down) / (2 * h)
            np.testing.assert_allclose(sens[name].ravel(), fd, rtol=1e-6, atol=1e-8, err_msg=name)

        value, d_params, d_inputs = value_and_sensitivities(
            _capped_quadratic, result.params, inputs, key, temperature
        )
        assert float(value) == pytest.approx(result.value, rel=1e-12)
        np.testing.assert_allclose(d_inputs["target"], sens["target"], rtol=1e-12)
        np.testing.assert_allclose(
            d_params, -analytic["target"] + 0.5 * jax.nn.sigmoid((theta - 1.0) / temperature), atol=1e-9
        )


# All tests on ``_noisy_quadratic`` share this config and input shapes, so the jitted
# chunks (80 and 40 steps) and the final pass compile once for the whole module.
NOISY_CONFIG = SnapoConfig(steps=200, log_every=80, learning_rate=0.1, warmup_steps=10)
NOISY_INPUTS = {"target": jnp.asarray([0.5, -1.0, 2.0])}


def test_stochastic_objective_converges_in_float32() -> None:
    result = train(_noisy_quadratic, jnp.zeros(3), NOISY_INPUTS, NOISY_CONFIG, key=jax.random.PRNGKey(1))
    assert result.params.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(result.params), np.asarray(NOISY_INPUTS["target"]), atol=0.05)
    # d E[value] / d target = 2 (theta - t) ~ 0 at the optimum, up to sampling noise of the eval key.
    assert np.max(np.abs(np.asarray(result.sensitivities["target"]))) < 0.2


def test_progress_called_with_increasing_counts() -> None:
    calls: list[tuple[int, int, float]] = []
    result = train(
        _noisy_quadratic,
        jnp.zeros(3),
        NOISY_INPUTS,
        NOISY_CONFIG,
        key=jax.random.PRNGKey(2),
        progress=lambda done, total, value: calls.append((done, total, value)),
    )
    assert [c[0] for c in calls] == [80, 160, 200]
    assert all(c[1] == 200 for c in calls)
    for done, _, value in calls:
        assert isinstance(value, float)
        assert value == pytest.approx(float(result.log.value[done - 1]))


def test_second_train_call_does_not_retrace() -> None:
    traces: list[int] = []

    def objective(theta, inputs, key, temperature):
        traces.append(1)  # runs only while JAX traces
        return -jnp.sum(jnp.square(theta - inputs["target"])) + 0.0 * temperature

    config = SnapoConfig(steps=40, log_every=20, learning_rate=0.05)
    first = train(objective, jnp.zeros(3), {"target": jnp.ones(3)}, config, key=jax.random.PRNGKey(0))
    n_first = len(traces)
    assert n_first == 2  # one chunk of 20 steps (reused twice) + the final reverse pass
    second = train(
        objective, jnp.full(3, 0.5), {"target": jnp.arange(3.0)}, config, key=jax.random.PRNGKey(9)
    )
    assert len(traces) == n_first
    assert not np.allclose(np.asarray(first.params), np.asarray(second.params))
    value_and_sensitivities(objective, second.params, {"target": jnp.ones(3)}, jax.random.PRNGKey(1), 0.01)
    assert len(traces) == n_first


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("steps", 0),
        ("steps", -3),
        ("steps", 2.5),
        ("log_every", 0),
        ("warmup_steps", -1),
        ("learning_rate", 0.0),
        ("learning_rate", float("nan")),
        ("clip_norm", -1.0),
        ("temperature_start", 0.0),
        ("temperature_end", -0.1),
        ("final_lr_fraction", 1.5),
        ("final_lr_fraction", "0.1"),
    ],
)
def test_bad_config_raises_naming_field(field: str, value) -> None:
    with pytest.raises(ValueError, match=f"^{field}:"):
        SnapoConfig(**{field: value})


class _Crash(Exception):
    pass


def _crash_after_first_chunk(done: int, total: int, value: float) -> None:
    raise _Crash(f"simulated crash at step {done}")


def _train_resumable(path: Path | None, **kwargs) -> SnapoResult:
    kwargs.setdefault("key", jax.random.PRNGKey(3))
    kwargs.setdefault("config", NOISY_CONFIG)
    kwargs.setdefault("init", jnp.zeros(3))
    config, init = kwargs.pop("config"), kwargs.pop("init")
    return train(_noisy_quadratic, init, NOISY_INPUTS, config, checkpoint=path, **kwargs)


def _assert_same_result(a: SnapoResult, b: SnapoResult) -> None:
    np.testing.assert_array_equal(np.asarray(a.params), np.asarray(b.params))
    for field in a.log._fields:
        np.testing.assert_array_equal(np.asarray(getattr(a.log, field)), np.asarray(getattr(b.log, field)))
    assert a.value == b.value
    np.testing.assert_array_equal(
        np.asarray(a.sensitivities["target"]), np.asarray(b.sensitivities["target"])
    )


def test_resume_after_crash_matches_uninterrupted_run(tmp_path: Path) -> None:
    reference = _train_resumable(None)
    path = tmp_path / "run" / "snapo.msgpack"
    with pytest.raises(_Crash):
        _train_resumable(path, progress=_crash_after_first_chunk)
    meta = load_metadata(path)
    assert meta["steps_done"] == 80 and meta["config"]["steps"] == 200

    calls: list[int] = []
    resumed = _train_resumable(path, progress=lambda done, total, value: calls.append(done))
    assert calls == [160, 200]  # the first chunk was not re-run
    assert len(resumed.log.value) == 200
    _assert_same_result(reference, resumed)
    assert load_metadata(path)["steps_done"] == 200

    # A finished checkpoint just returns the same result without training.
    calls.clear()
    again = _train_resumable(path, progress=lambda done, total, value: calls.append(done))
    assert calls == []
    _assert_same_result(reference, again)


def test_checkpointing_does_not_change_the_result(tmp_path: Path) -> None:
    _assert_same_result(_train_resumable(None), _train_resumable(tmp_path / "ck.msgpack"))


def test_resume_refuses_a_checkpoint_from_another_run(tmp_path: Path) -> None:
    path = tmp_path / "ck.msgpack"
    with pytest.raises(_Crash):
        _train_resumable(path, progress=_crash_after_first_chunk)
    other_steps = dataclasses.replace(NOISY_CONFIG, steps=240)
    with pytest.raises(ValueError, match=r"different config \(steps\)"):
        _train_resumable(path, config=other_steps)
    other_lr = dataclasses.replace(NOISY_CONFIG, learning_rate=0.01)
    with pytest.raises(ValueError, match=r"different config \(learning_rate\)"):
        _train_resumable(path, config=other_lr)
    with pytest.raises(ValueError, match="different key"):
        _train_resumable(path, key=jax.random.PRNGKey(4))
    with pytest.raises(ValueError, match="ck.msgpack: structure mismatch|ck.msgpack: leaf"):
        _train_resumable(path, init=jnp.zeros(4))
    assert load_metadata(path)["steps_done"] == 80  # refused runs leave the file alone
