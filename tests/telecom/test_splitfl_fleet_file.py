"""Split learning on a fleet of one's own devices (``devices.fleet_file``): read into the tiers, every
strategy runs on it; a bad file is refused at prepare time naming the file, row and column."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from decisions.platform import registry
from decisions.telecom.splitfl.spec import prepare
from tests.helpers import assert_input_error, with_sections

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HEADER = "name,count,cpu_gmacs,memory_mb,battery_wh,uplink_mbps,downlink_mbps,latency_ms,compute_w,tx_w,idle_w"
CAMERA = "camera,2,0.1,0.5,0.083,20,20,10,2.0,1.5,0.3"
PHONE = "phone,1,3,1024,11,2,10,40,4.0,2.5,0.5"


def _fleet(tmp_path: Path, *lines: str, name: str = "fleet.csv") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _spec(fleet: Path) -> dict:
    return with_sections(registry.get("splitfl").smoke_job(), devices={"fleet_file": fleet.name})


def test_the_example_spec_reads_its_fleet_into_tiers() -> None:
    job = prepare(tomllib.loads((EXAMPLES / "splitfl_own.toml").read_text()), EXAMPLES)
    tiers = job.devices.tiers
    assert list(tiers) == ["esp32_camera", "pi_zero_sensor", "midrange_phone", "jetson_gateway"]
    assert [t.clients for t in tiers.values()] == [3, 2, 4, 2]
    camera = tiers["esp32_camera"]
    assert camera.cpu_macs_per_s == pytest.approx(0.08e9) and camera.battery_j == pytest.approx(360.0)
    assert tiers["midrange_phone"].recharge_w == 0.0 and job.devices.fleet_file.endswith("splitfl_fleet.csv")
    assert registry.get("splitfl").job_from_config(job.config()) == job  # the run records the tiers themselves


def test_one_row_per_device_is_a_tier_of_one(tmp_path: Path) -> None:
    header = HEADER.replace("name,count,", "name,")
    rows = [f"dev{i}," + CAMERA.split(",", 2)[2] for i in range(3)]
    job = prepare(_spec(_fleet(tmp_path, header, *rows)), tmp_path)
    assert [t.clients for t in job.devices.tiers.values()] == [1, 1, 1]
    np.testing.assert_array_equal(job.devices.client_tiers(), [0, 1, 2])


@pytest.mark.parametrize(("lines", "words"), [
    ((HEADER.replace(",battery_wh", ""), CAMERA.replace(",0.083,", ",")), "fleet.csv: missing column 'battery_wh'"),
    ((HEADER, CAMERA, PHONE.replace(",3,", ",fast,")), "fleet.csv, row 3, column 'cpu_gmacs': 'fast' is not a finite number"),
    ((HEADER, CAMERA, PHONE.replace(",2,10,", ",2000000,10,")),
     "fleet.csv, row 3, column 'uplink_mbps': 2000000 is above 100000 (the file may be in bit/s"),
    ((HEADER, CAMERA, PHONE.replace(",11,", ",40000,")), "row 3, column 'battery_wh': 40000 is above 10000 (the file may be in J"),
    ((HEADER, CAMERA, CAMERA), "fleet.csv, row 3, column 'name': 'camera' is also the name of row 2"),
    ((HEADER, CAMERA.replace("camera,2,", "camera,0,")), "fleet.csv: it has no device"),
])
def test_a_bad_fleet_file_is_refused_naming_its_row_and_column(tmp_path: Path, lines: tuple[str, ...],
                                                               words: str) -> None:
    assert_input_error(prepare, _spec(_fleet(tmp_path, *lines)), tmp_path, field="devices.fleet_file", words=words)


def test_tiers_beside_a_fleet_file_are_refused(tmp_path: Path) -> None:
    spec = _spec(_fleet(tmp_path, HEADER, CAMERA))
    spec["devices"]["tiers"] = {"weak": {}}
    assert_input_error(prepare, spec, tmp_path, field="devices.tiers", words="not both")


@pytest.mark.slow
def test_the_smoke_job_runs_on_a_fleet_file(tmp_path: Path) -> None:
    domain = registry.get("splitfl")
    job = domain.prepare(_spec(_fleet(tmp_path, HEADER, CAMERA, PHONE)), tmp_path)
    report = domain.run_job(job)
    clients = report.clients
    assert set(clients["tier"]) == {"camera", "phone"} and clients["client"].nunique() == 3
