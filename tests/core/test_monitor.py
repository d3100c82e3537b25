"""The CUSUM monitor (decisions.core.monitor) and its design by simulation (monitor_design)."""

from __future__ import annotations

import json
import math
from statistics import NormalDist

import numpy as np
import pytest

from decisions.core import monitor_design
from decisions.core.monitor import MonitorState, scale_score, scan, standardise
from decisions.core.monitor_design import (
    InControl,
    delay_words,
    expected_delay,
    false_alarm_words,
    pair_delay,
    pair_thresholds,
    spread_words,
    threshold_for,
)
from decisions.core.monitor_pair import Alarm, Monitor, PairState, Thresholds, scan_pair
from decisions.errors import InputError

# Two-sided CUSUM, k = 0.5, N(0, 1) residuals (Montgomery, Introduction to Statistical Quality
# Control, table of the tabular CUSUM's ARL): h = 4 -> ARL0 168, 1-sigma ARL 8.38; h = 5 -> 465, 10.4.
PUBLISHED = {4.0: (168.0, 8.38), 5.0: (465.0, 10.4)}


def test_hand_computed_series() -> None:
    z = [1.0, 1.5, 0.2, 1.0, 2.0, -1.0, -2.0, -0.5, -0.6]
    result = scan(z, h=2.0, k=0.5)
    # S+: 0.5, 1.5, 1.2, 1.7, 3.2 > 2 (alarm, restart); S-: after the restart 0.5, 2.0 (not above 2), 2.0, 2.1.
    np.testing.assert_allclose(result.s_plus, [0.5, 1.5, 1.2, 1.7, 3.2, 0, 0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(result.s_minus, [0, 0, 0, 0, 0, 0.5, 2.0, 2.0, 2.1], atol=1e-12)
    assert result.alarms.tolist() == [4, 8]
    assert result.sides.tolist() == [1, -1]
    assert result.first_alarm == 4
    assert result.state == MonitorState(0.0, 0.0, 0)
    tail = scan(z[:3], h=2.0)
    assert tail.first_alarm is None and tail.state.count == 3
    assert tail.state.s_plus == pytest.approx(1.2)


def _mixed_series(n: int = 3000, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    shift = np.where((np.arange(n) // 500) % 3 == 1, 1.0, 0.0) - np.where(np.arange(n) // 500 == 5, 1.5, 0.0)
    return rng.standard_normal(n) + shift


def test_streaming_update_equals_scan() -> None:
    z = _mixed_series()
    result = scan(z, h=3.0, k=0.5)
    assert result.alarms.size > 5
    state, alarms = MonitorState(), []
    for i, value in enumerate(z):
        before = state
        state, alarm = state.update(float(value), h=3.0, k=0.5)
        if alarm:
            alarms.append(i)
            assert np.sign(value) == result.sides[len(alarms) - 1]
            assert max(result.s_plus[i], result.s_minus[i]) > 3.0 >= max(before.s_plus, before.s_minus)
        else:
            assert state.s_plus == pytest.approx(result.s_plus[i], abs=1e-9)
            assert state.s_minus == pytest.approx(result.s_minus[i], abs=1e-9)
    assert alarms == result.alarms.tolist()
    assert state.count == result.state.count
    assert state.s_plus == pytest.approx(result.state.s_plus, abs=1e-9)
    # a scan continued from a state equals the scan of the whole series
    first = scan(z[:1234], h=3.0)
    rest = scan(z[1234:], h=3.0, state=first.state)
    assert (first.alarms.tolist() + (rest.alarms + 1234).tolist()) == result.alarms.tolist()
    np.testing.assert_allclose(rest.s_minus, result.s_minus[1234:], atol=1e-9)
    assert rest.state.count == result.state.count


def test_state_is_plain_json() -> None:
    state = MonitorState(1.25, 0.5, 17)
    again = MonitorState.from_json(json.loads(json.dumps(state.to_json())))
    assert again == state
    assert MonitorState.from_json({}) == MonitorState()
    for data, field in (
        ({"s_plus": -1.0}, "state.s_plus"),
        ({"s_minus": float("nan")}, "state.s_minus"),
        ({"count": 1.5}, "state.count"),
        ({"extra": 1}, "state.extra"),
    ):
        with pytest.raises(InputError) as err:
            MonitorState.from_json(data)
        assert err.value.field == field


def test_threshold_matches_published_run_lengths() -> None:
    # Calibration: ~4000 * 0.8 alarms, so the ARL is within ~2% (one standard error) and, as
    # ln ARL grows by ~1 per unit of h here, h within ~0.02: 0.06 is three standard errors.
    for h, (arl0, _) in PUBLISHED.items():
        assert threshold_for(arl0) == pytest.approx(h, abs=0.06)


def test_delay_matches_published_run_lengths() -> None:
    # The 1-sigma run length has a standard deviation about 0.5 of its mean: over 4000 series, ~0.8%.
    for h, (_, delay) in PUBLISHED.items():
        assert expected_delay(1.0, h=h) == pytest.approx(delay, rel=0.03)
        assert expected_delay(-1.0, h=h) == pytest.approx(delay, rel=0.03)


def test_false_alarm_rate_matches_arl0() -> None:
    arl0, decisions = 100.0, 400_000
    h = threshold_for(arl0)
    alarms = scan(np.random.default_rng(2024).standard_normal(decisions), h=h).alarms.size
    # Renewal: alarms ~ decisions / arl0 = 4000 with near-geometric run lengths, so the count's
    # relative standard error is ~1/sqrt(4000) = 1.6%; the calibration's (~0.9 * 4000 series alarmed
    # within its 256-decision horizon) ~1.7%. Four combined standard errors (~9%); an h 0.1 off
    # moves the rate by ~10%.
    tolerance = 4 * math.hypot(1 / math.sqrt(decisions / arl0), 1 / math.sqrt(0.9 * monitor_design.CHAINS))
    assert alarms / decisions == pytest.approx(1 / arl0, rel=tolerance)


def test_shifted_series_caught_within_stated_delay() -> None:
    h = threshold_for(168.0)
    stated = expected_delay(1.0, h=h)
    rng = np.random.default_rng(11)
    delays = np.array([scan(rng.standard_normal(120) + 1.0, h=h).first_alarm + 1 for _ in range(600)])
    assert np.median(delays) <= stated
    # the mean is the stated delay: standard error of 600 run lengths plus the simulation's (~0.8%)
    error = delays.std() / math.sqrt(delays.size) + 0.008 * stated
    assert delays.mean() == pytest.approx(stated, abs=4 * error)


def test_threshold_monotone_and_deterministic() -> None:
    thresholds = [threshold_for(arl0) for arl0 in (20, 50, 100, 168, 465)]
    assert all(a < b for a, b in zip(thresholds, thresholds[1:], strict=False))
    monitor_design._threshold.cache_clear()
    assert threshold_for(100) == thresholds[2]  # recomputed, not cached
    assert threshold_for(100, seed=1) == pytest.approx(thresholds[2], abs=0.06)  # another seed, within noise
    assert threshold_for(100, k=1.0) < thresholds[2]


def test_words() -> None:
    assert false_alarm_words(500) == "about one false alarm per 500 decisions"
    assert false_alarm_words(1999.6) == "about one false alarm per 2,000 decisions"
    assert delay_words(-1.0, 10.4) == "a 1-sigma shift is caught within about 10 decisions"
    assert delay_words(3.0, 1.2) == "a 3-sigma shift is caught within about 1 decision"


def test_standardise_by_scale_and_interval() -> None:
    realised, expected = np.array([12.0, 9.0, 10.0]), np.array([10.0, 10.0, 10.0])
    np.testing.assert_allclose(standardise(realised, expected, scale=2.0), [1.0, -0.5, 0.0])
    np.testing.assert_allclose(standardise(realised, expected, scale=[2.0, 1.0, 4.0]), [1.0, -1.0, 0.0])
    sigma = 2.0
    half = sigma * NormalDist().inv_cdf(0.95)  # a 90% central interval of a normal with sigma 2
    z = standardise(realised, expected, expected - half, expected + half, coverage=0.9)
    np.testing.assert_allclose(z, [1.0, -0.5, 0.0])


def test_standardise_robust_scale_is_causal() -> None:
    rng = np.random.default_rng(5)
    expected = 100 + rng.standard_normal(600)
    realised = expected + 3.0 * rng.standard_normal(600)
    z = standardise(realised, expected, warmup=10, window=200)
    assert (z[:10] == 0).all()
    assert z[10:].std() == pytest.approx(1.0, abs=0.1)  # the MAD reads the residuals' sigma of 3
    for m in (10, 11, 150, 201, 450):
        np.testing.assert_array_equal(standardise(realised[:m], expected[:m]), z[:m])
    # intervals where given, the robust scale where not (NaN in both ends)
    low, high = expected - 2.0, expected + 2.0
    low[300:], high[300:] = np.nan, np.nan
    mixed = standardise(realised, expected, low, high, coverage=0.5)
    np.testing.assert_allclose(mixed[:300], (realised - expected)[:300] / (2.0 / NormalDist().inv_cdf(0.75)))
    np.testing.assert_array_equal(mixed[300:], z[300:])
    # constant residuals: the scale is floored, by default at 0.1% of |expected|
    flat = standardise(np.full(20, 101.0), np.full(20, 100.0))
    np.testing.assert_allclose(flat[10:], 1.0 / 0.1)
    np.testing.assert_allclose(standardise(np.full(20, 101.0), np.full(20, 100.0), scale_floor=0.5)[10:], 2.0)


def test_scale_score_is_standard_on_normal_residuals() -> None:
    # E sqrt|Z| and Var sqrt|Z| by quadrature against the normal density, not by the closed form
    x = np.linspace(-12.0, 12.0, 2_400_001)
    density = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    u = scale_score(x)
    assert np.trapezoid(u * density, x) == pytest.approx(0.0, abs=1e-5)
    assert np.trapezoid(u * u * density, x) == pytest.approx(1.0, abs=1e-5)
    # and the mean of the score of N(0, r^2) residuals is (sqrt(r) - 1) E sqrt|Z| / sd sqrt|Z|
    assert np.trapezoid(scale_score(2.0 * x) * density, x) == pytest.approx(0.97536, abs=1e-4)


def test_scale_channel_hand_computed_series() -> None:
    z = [0.0, 1.0, 4.0, 9.0, -4.0, 0.25, 0.0]
    # u = (sqrt|z| - 0.822179) / 0.349151 with sqrt|z| = 0, 1, 2, 3, 2, 0.5, 0
    u = [-2.354796, 0.509296, 3.373387, 6.237479, 3.373387, -0.922750, -2.354796]
    np.testing.assert_allclose(scale_score(z), u, atol=1e-5)
    result = scan_pair(z, Thresholds(h_mean=20.0, h_scale=3.0, k_mean=0.5, k_scale=0.5))
    # S^ = max(0, S^ + u - 0.5): 0, 0.009296, 2.882683, 8.620162 > 3 (alarm, restart), 2.873387, 1.450637, 0
    np.testing.assert_allclose(
        result.s_scale, [0, 0.009296, 2.882683, 8.620162, 2.873387, 1.450637, 0], atol=1e-5
    )
    np.testing.assert_allclose(result.s_plus, [0, 0.5, 4.0, 12.5, 0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(result.s_minus, [0, 0, 0, 0, 3.5, 2.75, 2.25], atol=1e-12)
    assert result.alarms.tolist() == [3] and result.channels == ("scale",) and result.sides.tolist() == [1]
    assert result.state == PairState(0.0, 2.25, 0.0, 3)
    # both cross at decision 3 when h_mean = 12: S+ is 1.04 of its threshold, S^ 2.87 of its own
    both = scan_pair(z[:4], Thresholds(h_mean=12.0, h_scale=3.0))
    assert both.channels == ("scale",)
    assert scan_pair(z[:4], Thresholds(h_mean=12.0, h_scale=9.0)).channels == ("mean",)


def _drifting_series(n: int = 4000, seed: int = 3) -> np.ndarray:
    block = np.arange(n) // 400
    spread = np.where(block % 3 == 1, 2.0, 1.0)
    return np.random.default_rng(seed).standard_normal(n) * spread + np.where(block == 5, -1.0, 0.0)


def test_pair_streaming_equals_scan_and_state_is_json() -> None:
    z = _drifting_series()
    limits = Thresholds(h_mean=4.0, h_scale=3.5)
    result = scan_pair(z, limits)
    assert {"mean", "scale"} <= set(result.channels) and -1 in result.sides
    state, fired = PairState(), []
    for i, value in enumerate(z):
        state, alarm = PairState.from_json(json.loads(json.dumps(state.to_json()))).update(
            float(value), limits
        )
        if alarm is not None:
            fired.append((i, alarm))
        else:
            np.testing.assert_allclose(
                [state.s_plus, state.s_minus, state.s_scale],
                [result.s_plus[i], result.s_minus[i], result.s_scale[i]],
                atol=1e-9,
            )
    assert [i for i, _ in fired] == result.alarms.tolist()
    assert [alarm for _, alarm in fired] == [
        Alarm(c, int(s)) for c, s in zip(result.channels, result.sides, strict=True)
    ]
    assert state.count == result.state.count and state.s_scale == pytest.approx(
        result.state.s_scale, abs=1e-9
    )
    first = scan_pair(z[:1500], limits)
    rest = scan_pair(z[1500:], limits, state=first.state)
    assert first.alarms.tolist() + (rest.alarms + 1500).tolist() == result.alarms.tolist()
    np.testing.assert_allclose(rest.s_scale, result.s_scale[1500:], atol=1e-9)
    for data, field in (({"s_scale": -1.0}, "state.s_scale"), ({"s_mean": 1.0}, "state.s_mean")):
        with pytest.raises(InputError) as err:
            PairState.from_json(data)
        assert err.value.field == field


def _alarm_rate_tolerance(decisions: int, arl0: float) -> float:
    """Four combined standard errors of an alarm rate: the count's (renewal, near-geometric run
    lengths: 1/sqrt(alarms)) and the calibration's (~0.9 of the chains alarmed within its horizon)."""
    return 4 * math.hypot(1 / math.sqrt(decisions / arl0), 1 / math.sqrt(0.9 * monitor_design.CHAINS))


def test_pair_false_alarm_rate_matches_arl0() -> None:
    arl0, decisions = 100.0, 400_000
    monitor = Monitor(arl0=arl0)
    h_mean, h_scale = monitor.thresholds.h_mean, monitor.thresholds.h_scale
    # each channel alone at 2 * arl0 would give a longer combined run length: the pair sits between
    assert threshold_for(arl0) < h_mean < threshold_for(2 * arl0)
    assert threshold_for(arl0, channel="scale") < h_scale < threshold_for(2 * arl0, channel="scale")
    result = monitor.scan(np.random.default_rng(2025).standard_normal(decisions))
    assert result.alarms.size / decisions == pytest.approx(
        1 / arl0, rel=_alarm_rate_tolerance(decisions, arl0)
    )
    assert 1 / 3 < result.channels.count("scale") / result.alarms.size < 2 / 3  # the rate split between both
    # the scale channel alone, calibrated on the same transform of N(0, 1) draws
    alone = scan_pair(
        np.random.default_rng(2026).standard_normal(decisions),
        Thresholds(1e9, h_scale=threshold_for(arl0, channel="scale")),
    )
    assert alone.alarms.size / decisions == pytest.approx(
        1 / arl0, rel=_alarm_rate_tolerance(decisions, arl0)
    )


def test_doubled_spread_caught_within_stated_delay() -> None:
    monitor = Monitor(arl0=100.0)
    stated = monitor.expected_delay(ratio=2.0)
    assert stated < expected_delay(
        0.0, h=threshold_for(100.0), ratio=2.0
    )  # faster than the mean channel alone
    rng = np.random.default_rng(12)
    change, delays, channels = 40, [], []
    for _ in range(600):
        z = rng.standard_normal(200) * np.where(np.arange(200) < change, 1.0, 2.0)
        result = monitor.scan(z)
        after = np.flatnonzero(result.alarms >= change)  # an earlier false alarm restarts the monitor
        delays.append(result.alarms[after[0]] - change + 1)
        channels.append(result.channels[after[0]])
    assert np.median(delays) <= stated
    assert channels.count("scale") > 0.4 * len(
        channels
    )  # most often the scale channel, not only the mean one
    # from the start, the zero-state run length is the stated one (run lengths' sd ~ their mean)
    zero_state = np.array([monitor.scan(2.0 * rng.standard_normal(200)).first_alarm + 1 for _ in range(600)])
    error = zero_state.std() / math.sqrt(zero_state.size) + 0.01 * stated
    assert zero_state.mean() == pytest.approx(stated, abs=4 * error)


def test_pair_catches_a_mean_shift_on_the_mean_channel() -> None:
    monitor = Monitor(arl0=100.0)
    stated = monitor.expected_delay(1.0)
    rng = np.random.default_rng(13)
    for shift, side in ((1.0, 1), (-1.0, -1)):
        first = [monitor.scan(rng.standard_normal(150) + shift) for _ in range(300)]
        alarms = [Alarm(r.channels[0], int(r.sides[0])) for r in first]
        assert alarms.count(Alarm("mean", side)) > 0.8 * len(alarms)
        assert np.median([r.first_alarm + 1 for r in first]) <= stated
    assert stated == pytest.approx(
        pair_delay(-1.0, h_mean=monitor.thresholds.h_mean, h_scale=monitor.thresholds.h_scale), rel=0.05
    )


def test_pair_design_deterministic_and_words() -> None:
    limits = Monitor(arl0=100).thresholds
    assert pair_thresholds(100.0) == (limits.h_mean, limits.h_scale)
    monitor_design._pair.cache_clear()
    monitor_design._threshold.cache_clear()
    assert Monitor(arl0=100.0).thresholds == limits  # recomputed, not cached
    assert pair_thresholds(100.0, seed=1)[1] == pytest.approx(
        limits.h_scale, abs=0.06
    )  # another seed, within noise
    assert threshold_for(100, channel="scale", k=1.0) < threshold_for(100, channel="scale")
    assert spread_words(2.0, 7.2) == "a doubling of the spread is caught within about 7 decisions"
    assert spread_words(1.5, 15.7) == "the spread multiplied by 1.5 is caught within about 16 decisions"


def _ar1(rng: np.random.Generator, n: int, phi: float) -> np.ndarray:
    """``n`` steps of a stationary AR(1) with unit variance and heavy (t, 3 df) innovations."""
    shocks = rng.standard_t(3, n) / math.sqrt(3.0) * math.sqrt(1 - phi**2)
    out = np.empty(n)
    out[0] = shocks[0] / math.sqrt(1 - phi**2)
    for i in range(1, n):
        out[i] = phi * out[i - 1] + shocks[i]
    return out


def test_in_control_calibration_holds_the_stated_rate_on_correlated_heavy_tailed_residuals() -> None:
    arl0, rng = 50.0, np.random.default_rng(7)
    reference = InControl(tuple(_ar1(rng, 20_000, 0.5)), block=50)
    calibrated, plain = Monitor(arl0, in_control=reference), Monitor(arl0)
    assert calibrated.thresholds.h_mean > 1.3 * plain.thresholds.h_mean  # sums of correlated residuals spread more
    fresh = _ar1(rng, 100_000, 0.5)
    rate = calibrated.scan(fresh).alarms.size / fresh.size
    assert rate == pytest.approx(1 / arl0, rel=0.25)
    assert plain.scan(fresh).alarms.size / fresh.size > 1.4 / arl0  # N(0, 1) thresholds alarm too often
    assert "20,000 in-control residuals resampled in blocks of 50" in reference.words()


def test_in_control_on_independent_normal_residuals_gives_the_normal_thresholds() -> None:
    reference = InControl(tuple(np.random.default_rng(3).standard_normal(50_000)), block=1, clip=50.0)
    normal, resampled = Monitor(100.0).thresholds, Monitor(100.0, in_control=reference).thresholds
    assert resampled.h_mean == pytest.approx(normal.h_mean, rel=0.05)
    assert resampled.h_scale == pytest.approx(normal.h_scale, rel=0.05)


def test_in_control_clips_the_monitored_residuals() -> None:
    reference = InControl(tuple(np.random.default_rng(4).standard_normal(5_000)), block=24)
    monitor = Monitor(100.0, in_control=reference)
    wild = np.r_[np.zeros(5), 1e3, np.zeros(5)]
    assert monitor.scan(wild).alarms.size == 0  # one outcome moves a statistic by at most clip - k
    assert Monitor(100.0).scan(wild).alarms.tolist() == [5]
    state, alarm = monitor.update(PairState(), 1e3)
    assert alarm is None and state.s_plus == pytest.approx(reference.clip - monitor.k_mean)


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: InControl((0.0, float("nan")), block=1), "residuals"),
        (lambda: InControl((0.0, 1.0, 2.0), block=2), "residuals"),
        (lambda: InControl((0.0, 1.0), block=0), "block"),
        (lambda: InControl((0.0, 1.0), block=1, clip=0.0), "clip"),
        (lambda: Monitor(100, in_control=(0.0, 1.0)), "in_control"),
        (lambda: threshold_for(1.5), "arl0"),
        (lambda: threshold_for(float("nan")), "arl0"),
        (lambda: threshold_for(1e6), "arl0"),
        (lambda: threshold_for(50, k=3.0), "arl0"),
        (lambda: threshold_for(100, k=-0.1), "k"),
        (lambda: threshold_for(100, chains=10), "chains"),
        (lambda: threshold_for(100, seed=-1), "seed"),
        (lambda: scan([0.1, float("nan")], h=4.0), "z"),
        (lambda: scan([0.1], h=0.0), "h"),
        (lambda: scan([0.1], h=4.0, k=float("inf")), "k"),
        (lambda: MonitorState().update(float("inf"), h=4.0), "z"),
        (lambda: expected_delay(float("inf"), h=4.0), "shift"),
        (lambda: expected_delay(1.0, h=-1.0), "h"),
        (lambda: standardise([1.0, 2.0], [1.0]), "expected"),
        (lambda: standardise([1.0], [1.0], scale=0.0), "scale"),
        (lambda: standardise([1.0], [1.0], interval_low=[0.0]), "interval_high"),
        (lambda: standardise([1.0], [1.0], [2.0], [1.0]), "interval_high"),
        (lambda: standardise([1.0], [1.0], [0.0], [float("inf")]), "interval_high"),
        (lambda: standardise([1.0, 2.0], [1.0, 2.0], [0.0, float("nan")], [2.0, 3.0]), "interval_high"),
        (lambda: standardise([1.0], [1.0], [0.0], [2.0], coverage=1.0), "coverage"),
        (lambda: standardise([1.0], [1.0], warmup=1), "warmup"),
        (lambda: threshold_for(100, channel="spread"), "channel"),
        (lambda: expected_delay(0.0, h=4.0, ratio=0.0), "ratio"),
        (lambda: expected_delay(0.0, h=4.0, channel="scale", ratio=11.0), "ratio"),
        (lambda: pair_thresholds(1.0), "arl0"),
        (lambda: pair_thresholds(100, k_mean=-1.0), "k_mean"),
        (lambda: pair_thresholds(100, k_scale=float("nan")), "k_scale"),
        (lambda: pair_delay(h_mean=0.0, h_scale=4.0), "h_mean"),
        (lambda: pair_delay(2.0, 0.0, h_mean=4.0, h_scale=4.0), "ratio"),
        (lambda: Monitor(arl0=20_000), "arl0"),
        (lambda: Monitor(arl0=100, k_scale=-0.5), "k_scale"),
        (lambda: Thresholds(h_mean=4.0, h_scale=-1.0), "h_scale"),
        (lambda: PairState().update(float("nan"), Thresholds(4.0, 4.0)), "z"),
        (lambda: scan_pair([0.0, float("inf")], Thresholds(4.0, 4.0)), "z"),
    ],
)
def test_bad_parameters_name_the_field(call, field: str) -> None:
    with pytest.raises(InputError) as err:
        call()
    assert err.value.field == field
