"""Traffic metrics on hand-written tripinfo files with hand-computed values (no SUMO run)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from decisions.errors import InputError
from decisions.mobility.traffic.flows import lane_flows, route_counts
from decisions.mobility.traffic.metrics import (
    METRIC_NAMES,
    TripRecords,
    episode_metrics,
    jain,
    metrics_from_records,
    read_tripinfo,
)
from decisions.mobility.traffic.scenarios import get_scenario
from decisions.mobility.traffic.webster import WebsterPlan, webster_timing

TRIPINFO = """<?xml version="1.0" encoding="UTF-8"?>
<tripinfos>
    <tripinfo id="a" depart="10.00" departDelay="2.00" arrival="100.00" duration="90.00"
              waitingTime="4.00" timeLoss="10.00" vaporized=""/>
    <tripinfo id="b" depart="20.00" departDelay="0.00" arrival="-1.00" duration="80.00"
              waitingTime="6.00" timeLoss="20.00" vaporized="end"/>
    <tripinfo id="c" depart="-1" departDelay="0.00" arrival="-1.00" duration="0.00"
              waitingTime="0.00" timeLoss="0.00" vaporized="end"/>
    <personinfo id="p1" depart="5.00" type="DEFAULT_PEDTYPE" duration="60.00" waitingTime="8.00" timeLoss="9.00">
        <walk depart="5.00" arrival="30.00" duration="25.00" timeLoss="6.00" waitingTime="5.00"/>
        <walk depart="30.00" arrival="65.00" duration="35.00" timeLoss="3.00" waitingTime="3.00"/>
    </personinfo>
    <personinfo id="p2" depart="7.00" type="DEFAULT_PEDTYPE" duration="40.00" waitingTime="0.00" timeLoss="1.00">
        <walk depart="7.00" arrival="47.00" duration="40.00" timeLoss="1.00" waitingTime="0.00"/>
    </personinfo>
    <personinfo id="p3" depart="-1" type="DEFAULT_PEDTYPE" duration="0.00" waitingTime="0.00" timeLoss="0.00"/>
    <personinfo id="p4" depart="50.00" type="DEFAULT_PEDTYPE" duration="50.00" waitingTime="4.00" timeLoss="5.00">
        <walk depart="50.00" arrival="-1.00" duration="50.00" timeLoss="5.00" waitingTime="4.00"/>
    </personinfo>
</tripinfos>
"""


def test_episode_metrics_match_hand_computed_values(tmp_path: Path) -> None:
    path = tmp_path / "tripinfo.xml"
    path.write_text(TRIPINFO)
    m = episode_metrics(path, pending_delays=[30.0])
    assert list(m) == list(METRIC_NAMES)
    # vehicles: a = 10 + 2, b (unfinished) = 20 + 0, never inserted = 30; c (undeparted record) skipped
    assert m["veh_count"] == 3
    assert m["veh_delay_mean"] == pytest.approx(62 / 3)
    assert m["veh_delay_p95"] == pytest.approx(
        20 + 0.9 * 10
    )  # linear interpolation at rank 1.9 of [12, 20, 30]
    assert m["veh_delay_max"] == 30
    assert m["veh_wait_mean"] == pytest.approx(10 / 3)  # 4, 6, and 0 for the never-inserted vehicle
    # pedestrians: p1 = 5 + 3, p2 = 0, p4 (unfinished) = 4; p3 never departed
    assert m["ped_count"] == 3
    assert m["ped_wait_mean"] == pytest.approx(4.0)
    assert m["ped_wait_p95"] == pytest.approx(4 + 0.9 * 4)
    assert m["ped_wait_max"] == 8
    assert m["ped_timeloss_mean"] == pytest.approx((9 + 1) / 2)  # p4's walk did not finish
    assert m["ped_veh_ratio"] == pytest.approx(4 / (62 / 3))
    individual = [12, 20, 30, 8, 0, 4]
    assert m["jain_individual"] == pytest.approx(74**2 / (6 * sum(x * x for x in individual)))
    assert m["jain_individual"] == pytest.approx(0.5988626)
    mean_v, mean_p = 62 / 3, 4.0
    assert m["jain_groups"] == pytest.approx((mean_v + mean_p) ** 2 / (2 * (mean_v**2 + mean_p**2)))
    assert (m["veh_throughput"], m["ped_throughput"]) == (1, 2)
    assert (m["unfinished_vehicles"], m["uninserted_vehicles"], m["unfinished_pedestrians"]) == (2, 1, 1)


def test_pedestrian_time_loss_averages_finished_walks_only(tmp_path: Path) -> None:
    path = tmp_path / "tripinfo.xml"
    path.write_text(
        """<tripinfos>
    <personinfo id="p1" depart="5.00" duration="20.00" waitingTime="2.00" timeLoss="12.00">
        <walk depart="5.00" arrival="25.00" duration="20.00" timeLoss="12.00" waitingTime="2.00"/>
    </personinfo>
    <personinfo id="p2" depart="9.00" duration="11.00" waitingTime="1.00" timeLoss="0.00">
        <walk depart="9.00" arrival="-1.00" duration="11.00" timeLoss="0.00" waitingTime="1.00"/>
    </personinfo>
</tripinfos>
"""
    )
    records = read_tripinfo(path)
    assert records.ped_timeloss == [12.0] and records.ped_wait == [2.0, 1.0]
    m = metrics_from_records(records)
    assert m["ped_timeloss_mean"] == 12.0  # not (12 + 0) / 2
    assert (m["ped_count"], m["ped_throughput"], m["unfinished_pedestrians"]) == (2, 1, 1)


def test_empty_groups_give_nan_not_errors() -> None:
    m = metrics_from_records(TripRecords())
    assert m["veh_count"] == 0 and m["ped_count"] == 0
    for key in (
        "veh_delay_mean",
        "veh_delay_p95",
        "ped_wait_mean",
        "ped_wait_max",
        "ped_veh_ratio",
        "jain_groups",
    ):
        assert math.isnan(m[key]), key
    only_vehicles = metrics_from_records(
        TripRecords(veh_delay=[3.0, 5.0], veh_wait=[1.0, 1.0], veh_arrived=2)
    )
    assert only_vehicles["veh_delay_mean"] == 4.0
    assert math.isnan(only_vehicles["ped_wait_p95"]) and math.isnan(only_vehicles["jain_groups"])
    assert only_vehicles["jain_individual"] == pytest.approx(64 / (2 * 34))


def test_jain_index_edge_cases() -> None:
    assert math.isnan(jain([]))
    assert jain([0.0, 0.0]) == 1.0
    assert jain([5.0, 5.0, 5.0]) == pytest.approx(1.0)
    assert jain([1.0, 0.0]) == pytest.approx(0.5)
    assert jain([1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)


def test_missing_or_broken_tripinfo_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        episode_metrics(tmp_path / "absent.xml")
    assert err.value.field == "tripinfo"
    broken = tmp_path / "broken.xml"
    broken.write_text("<tripinfos><tripinfo id='a'")
    with pytest.raises(InputError) as err:
        episode_metrics(broken)
    assert err.value.field == "tripinfo"


def test_webster_timing_matches_the_formula() -> None:
    # L = 2 stages x 4 s, Y = 0.7: C0 = (1.5 * 8 + 5) / 0.3; greens split 2:5 of C0 - L, plus 4 s lost each
    c0, slots = webster_timing([0.2, 0.5], 4.0, delta_time=5, min_slot=10)
    assert c0 == pytest.approx(17 / 0.3)
    green = 17 / 0.3 - 8
    assert green * 0.2 / 0.7 + 4 == pytest.approx(17.905, abs=1e-3)  # rounds to 20
    assert slots == (20, 40)
    saturated, slots = webster_timing([0.5, 0.5], 4.0, delta_time=5, min_slot=10, max_cycle=120)
    assert saturated == 120 and slots == (60, 60)
    _, idle = webster_timing([0.0, 0.0, 0.0], 4.0, delta_time=5, min_slot=10)
    assert idle == (10, 10, 10)  # C0 = 23 s clipped up to three minimum slots
    plan = WebsterPlan(phases=(0, 2), slots=(20, 40), ratios=(0.2, 0.5), webster_cycle=c0)
    assert [plan.phase_at(t) for t in (0, 15, 20, 59, 60, 85)] == [0, 0, 2, 2, 0, 2]


def test_route_counts_and_lane_flows_from_sumo_rl_flows() -> None:
    scenario = get_scenario(
        "single-intersection"
    )  # flows with probability 0.2 (n->s) and 0.5 (w->e) per second

    def no_routing(src: str, dst: str) -> tuple[str, ...]:
        raise AssertionError("flows with route ids must not need routing")

    counts = route_counts([scenario.route_file], 0, 3600, no_routing)
    assert counts == {("n_t", "t_s"): pytest.approx(720.0), ("w_t", "t_e"): pytest.approx(1800.0)}
    links = [
        ("n_t_0", "n_t", "t_s_0", "t_s"),
        ("n_t_1", "n_t", "t_s_1", "t_s"),
        ("w_t_0", "w_t", "t_e_0", "t_e"),
    ]
    flows = lane_flows(links, counts, 3600)
    np.testing.assert_allclose([flows["n_t_0"], flows["n_t_1"], flows["w_t_0"]], [360.0, 360.0, 1800.0])
