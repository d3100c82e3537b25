"""The Open Bandit sample: packaged data, the BTS policy, the click model, the standard check, the front."""

from __future__ import annotations

import math
from pathlib import Path

import jax
import numpy as np
import pytest

from decisions.errors import InputError
from decisions.recsys.utility import obd, obd_study, ope

CLICKS = {
    ("random", "all"): 38, ("bts", "all"): 42,
    ("random", "men"): 46, ("bts", "men"): 69,
    ("random", "women"): 46, ("bts", "women"): 46,
}


@pytest.mark.parametrize(("policy", "campaign"), list(CLICKS))
def test_packaged_logs_load(policy: str, campaign: str) -> None:
    log = obd.load_log(policy, campaign)
    assert log.n == 10_000
    assert log.click.sum() == CLICKS[policy, campaign]
    assert log.n_items == obd.N_ITEMS[campaign]
    assert set(np.unique(log.position)) == {0, 1, 2}
    assert log.item.min() >= 0 and log.item.max() < log.n_items
    if policy == "random":
        np.testing.assert_allclose(log.propensity, 1.0 / log.n_items, rtol=1e-6)


def test_item_values_and_prior() -> None:
    for campaign in obd.CAMPAIGNS:
        values = obd.item_values(campaign)
        alpha, beta = obd.bts_prior(campaign)
        assert values.shape == alpha.shape == beta.shape == (obd.N_ITEMS[campaign],)
        assert abs(values.mean()) < 1e-6 and values.std() == pytest.approx(1.0, abs=0.05)  # standardised
    assert obd.bts_prior("all")[0][7] == 857.0  # obp's prior_bts.yaml, all.alpha[7]


def _write_log(path: Path, rows: list[str], header: str = "item_id,position,click,propensity_score") -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def test_bad_log_values_name_column_and_row(tmp_path: Path) -> None:
    good = "3,1,0,0.0125"
    cases = [
        ("4,4,0,0.0125", "position"),
        ("4,2,0,0", "propensity_score"),
        ("4,2,0,1.5", "propensity_score"),
        ("80,2,0,0.0125", "item_id"),
        ("4,2,x,0.0125", "click"),
    ]
    for bad, column in cases:
        path = _write_log(tmp_path / "log.csv", [good, good, bad])
        with pytest.raises(InputError, match="row 3 of log.csv") as info:
            obd.load_log("random", "all", path=path)
        assert info.value.field == column
    path = _write_log(tmp_path / "log.csv", ["3,1,0"], header="item_id,position,click")
    with pytest.raises(InputError) as info:
        obd.load_log("random", "all", path=path)
    assert info.value.field == "propensity_score"
    with pytest.raises(InputError) as info:
        obd.load_log("random", "kids")
    assert info.value.field == "campaign"


def test_bts_policy_sums_to_one_per_position() -> None:
    empirical = obd.bts_policy("all", "empirical")
    prior = obd.bts_policy("men", "prior", n_sim=4_000)
    for table, n_items in ((empirical, 80), (prior, 34)):
        assert table.shape == (n_items, obd.N_POSITIONS)
        assert (table >= 0).all()
        np.testing.assert_allclose(table.sum(axis=0), 1.0, atol=1e-6)
    np.testing.assert_array_equal(prior, obd.bts_policy("men", "prior", n_sim=4_000))  # fixed seed
    with pytest.raises(InputError) as info:
        obd.bts_policy("men", "posterior")  # type: ignore[arg-type]
    assert info.value.field == "source"


def test_prior_policy_matches_obp_algorithm_in_numpy() -> None:
    # obp's BernoulliTS.select_action: Beta draws, argsort()[::-1][:len_list]; counted per position.
    alpha, beta = obd.bts_prior("men")
    draws = np.random.default_rng(0).beta(alpha, beta, size=(20_000, alpha.size))
    ranked = np.argsort(draws, axis=1)[:, ::-1][:, : obd.N_POSITIONS]
    reference = np.stack([np.bincount(ranked[:, k], minlength=alpha.size) for k in range(3)], axis=1) / 20_000
    ours = obd.bts_policy("men", "prior", n_sim=4_000)
    assert np.abs(ours - reference).max() < 0.04  # ~4 standard errors of the 4,000-draw Monte Carlo


def test_click_model() -> None:
    log = obd.load_log("random", "women")
    model = obd.fit_click_model(log)
    assert math.isinf(model.strength)  # no evidence of item differences: full pooling
    np.testing.assert_allclose(model.rates, np.broadcast_to(model.position_rate, model.rates.shape))
    pooled = [log.click[log.position == p].mean() for p in range(3)]
    np.testing.assert_allclose(model.position_rate, pooled)
    shrunk = obd.fit_click_model(obd.load_log("random", "all"))
    assert 1.0 < shrunk.strength < 1e5 and (shrunk.rates > 0).all() and (shrunk.rates < 0.05).all()
    q = obd.cross_fitted_q(log)
    assert q.shape == (log.n, log.n_items) and np.isfinite(q).all()


def test_click_model_with_a_given_strength() -> None:
    log = obd.load_log("random", "all")
    full = obd.fit_click_model(log)
    held = obd.fit_click_model(log, np.arange(0, log.n, 2), strength=full.strength)
    assert held.strength == full.strength
    assert math.isinf(obd.fit_click_model(log, strength=math.inf).strength)


def test_refit_resamples_keep_the_full_data_strength(monkeypatch: pytest.MonkeyPatch) -> None:
    log = obd.load_log("random", "all")
    full = obd.fit_click_model(log).strength
    assert full == pytest.approx(10**2.9)
    fitted: list[float] = []
    fit = obd.fit_click_model

    def spy(*args: object, **kwargs: object) -> obd.ClickModel:
        model = fit(*args, **kwargs)  # type: ignore[arg-type]
        fitted.append(model.strength)
        return model

    monkeypatch.setattr(obd, "fit_click_model", spy)
    policy = obd.bts_policy("all", "empirical")
    draws = obd_study.refit_draws(log, policy, jax.random.key(0), n_boot=3)
    assert draws["dm"].shape == (3, 1)
    assert fitted[0] == full  # the full log's fit, then every fold of every resample
    assert fitted[1:] == [full] * (3 * obd.N_FOLDS)


def test_golden_ips_for_campaign_all() -> None:
    log = obd.load_log("random", "all")
    policy = obd.bts_policy("all", "empirical")
    estimates = ope.estimate_all(obd.ope_inputs(log, policy, obd.cross_fitted_q(log)))
    assert float(estimates["ips"][0]) == pytest.approx(0.005035367, rel=1e-5)


def test_standard_check_figures_are_finite() -> None:
    figures, table = obd_study.standard_check(n_boot=4, policy_source="empirical")
    assert len(table) == len(obd.CAMPAIGNS) * len(ope.ESTIMATORS)
    for campaign in obd.CAMPAIGNS:
        for quantity in ("truth", "truth_ci_low", "truth_ci_high"):
            assert math.isfinite(figures[f"obd_{quantity}_{campaign}"])
        for name in ope.ESTIMATORS:
            for quantity in ("rel_error", "estimate", "ci_low", "ci_high"):
                assert math.isfinite(figures[f"obd_{quantity}_{name}_{campaign}"]), (quantity, name, campaign)
    assert len(figures) == len(obd.CAMPAIGNS) * (4 * len(ope.ESTIMATORS) + 3)
    assert figures["obd_truth_all"] == pytest.approx(42 / 10_000)
    assert figures["obd_estimate_ips_all"] == pytest.approx(0.005035367, rel=1e-5)


def test_real_front() -> None:
    lambdas = [0.0, 0.5, 1.0]
    front = obd_study.real_front(lambdas, campaign="men", n_boot=8)
    assert front["lambda"].tolist() == lambdas
    for name in obd_study.FRONT_ESTIMATORS:
        assert (front[f"click_{name}_low"] <= front[f"click_{name}_high"]).all()
    assert front["non_dominated"].any()
    assert not (front["dominated_with_confidence"] & front["non_dominated"]).any()
    # lambda = 1: softmax of the standardised item values; its exact value per impression.
    values = obd.item_values("men")
    z = (values - values.mean()) / values.std()
    pi = np.exp(z / obd_study.DEFAULT_TEMPERATURE)
    assert front["value"].iloc[-1] == pytest.approx(float(pi @ values / pi.sum()), rel=1e-5)


@pytest.mark.parametrize("lambdas", [[0.0, 1.5], [-0.1], [float("nan")], []])
def test_real_front_rejects_bad_lambda(lambdas: list[float]) -> None:
    with pytest.raises(InputError) as info:
        obd_study.real_front(lambdas, n_boot=2)
    assert info.value.field == "lambda"


def test_real_front_rejects_bad_settings() -> None:
    for kwargs, field in (({"temperature": 0.0}, "temperature"), ({"click_score": "ctr"}, "click_score"),
                          ({"estimator": "dm"}, "estimator")):
        with pytest.raises(InputError) as info:
            obd_study.real_front([0.5], n_boot=2, **kwargs)
        assert info.value.field == field
