"""How the packaged data files were derived from the CityLearn 2022 ("phase_all") district."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

NUM_BUILDINGS = 17
HORIZONS = (6, 12, 24)

_LOAD = "Equipment Electric Power [kWh]"
_SOLAR = "Solar Generation [W/kW]"
_WEATHER = {
    "temperature_c": "Outdoor Drybulb Temperature [C]",
    "diffuse_w_m2": "Diffuse Solar Radiation [W/m2]",
    "direct_w_m2": "Direct Solar Radiation [W/m2]",
}
_PRICE = "Electricity Pricing [$/kWh]"


def _building_frames(source: Path) -> list[pd.DataFrame]:
    return [pd.read_csv(source / f"Building_{n}.csv") for n in range(1, NUM_BUILDINGS + 1)]


def check_forecasts(source: str | Path) -> dict[str, bool]:
    """``{forecast column: equals its series shifted by the horizon (with wrap-around)}`` of the original files in ``source``."""
    source = Path(source)
    out: dict[str, bool] = {}
    pricing = pd.read_csv(source / "pricing.csv")
    weather = pd.read_csv(source / "weather.csv")
    for frame, bases in ((pricing, [_PRICE]), (weather, list(weather.columns[:4]))):
        for base in bases:
            series = frame[base].to_numpy()
            for h in HORIZONS:
                column = f"{h}h Prediction {base}"
                out[column] = bool(np.array_equal(frame[column].to_numpy(), np.roll(series, -h)))
    return out


def derive_frames(source: str | Path) -> dict[str, pd.DataFrame | dict]:
    """The compact tables ``{"loads", "solar", "timeseries", "buildings"}`` from the original CityLearn files in
    ``source`` (``Building_<n>.csv``, ``pricing.csv``, ``carbon_intensity.csv``, ``weather.csv``, ``schema.json``).
    """
    source = Path(source)
    frames = _building_frames(source)
    names = [f"building_{n}" for n in range(1, NUM_BUILDINGS + 1)]
    loads = pd.DataFrame({name: f[_LOAD].round(6) for name, f in zip(names, frames, strict=True)})
    solar = pd.DataFrame({name: f[_SOLAR].round(3) for name, f in zip(names, frames, strict=True)})
    calendar = frames[0][["Month", "Hour", "Day Type"]].astype(int)
    weather = pd.read_csv(source / "weather.csv")
    timeseries = pd.DataFrame(
        {
            "month": calendar["Month"],
            "hour": calendar["Hour"],
            "day_type": calendar["Day Type"],
            "price": pd.read_csv(source / "pricing.csv")[_PRICE],
            "carbon_intensity": pd.read_csv(source / "carbon_intensity.csv").iloc[:, 0].round(9),
            **{name: weather[column] for name, column in _WEATHER.items()},
        }
    )
    schema = json.loads((source / "schema.json").read_text())
    buildings = {}
    for name in names:
        entry = schema["buildings"][name.capitalize()]
        battery = entry["electrical_storage"]["attributes"]
        buildings[name] = {
            "battery_capacity_kwh": battery["capacity"],
            "battery_nominal_power_kw": battery["nominal_power"],
            "battery_efficiency": battery["efficiency"],
            "battery_capacity_loss_coefficient": battery["capacity_loss_coefficient"],
            "battery_loss_coefficient": battery["loss_coefficient"],
            "pv_nominal_power_kw": entry["pv"]["attributes"]["nominal_power"],
        }
    return {"loads": loads, "solar": solar, "timeseries": timeseries, "buildings": buildings}


def write_compact(source: str | Path, out: str | Path) -> list[Path]:
    """Derive the compact tables and write them (gzipped CSV and JSON) into ``out`` (created if missing); the paths written.

    Raises:
        ValueError: a forecast column is not the shifted series (the derivation would lose data).
    """
    bad = [name for name, ok in check_forecasts(source).items() if not ok]
    if bad:
        raise ValueError(f"forecast columns are not shifted series: {', '.join(bad)}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tables = derive_frames(source)
    written = []
    for name in ("loads", "solar", "timeseries"):
        path = out / f"{name}.csv.gz"
        frame = tables[name]
        assert isinstance(frame, pd.DataFrame)
        # mtime=0 keeps the gzip bytes reproducible.
        frame.to_csv(path, index=False, compression={"method": "gzip", "mtime": 0})
        written.append(path)
    path = out / "buildings.json"
    path.write_text(json.dumps(tables["buildings"], indent=1) + "\n")
    written.append(path)
    return written


if __name__ == "__main__":  # pragma: no cover - a one-off maintenance script
    if len(sys.argv) != 3:
        raise SystemExit("usage: python -m decisions.energy.building.derive SOURCE_DIR OUT_DIR")
    for written_path in write_compact(sys.argv[1], sys.argv[2]):
        print(written_path)
