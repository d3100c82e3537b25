"""A fleet of one's own devices from a CSV file, read into the tiers of ``devices.DeviceScenario`` (no JAX).

One row per tier (``count`` devices alike) or one row per device (no ``count`` column, or 1): the
columns, lower case, in any order (``FLEET_COLUMNS``; ``count`` and ``recharge_w`` optional) ::

    name,count,cpu_gmacs,memory_mb,battery_wh,uplink_mbps,downlink_mbps,latency_ms,compute_w,tx_w,idle_w,recharge_w
    camera_node,4,0.1,0.5,0.083,20,20,10,2.0,1.5,0.3,0.2

Each row becomes the tier ``name`` (``Tier``: MAC/s, MB, J, Mb/s, ms, W), so every strategy runs on it
unchanged; a value outside its plausible range is refused naming the file, row and column, with the unit
the file is likely in when it looks like another one (bit/s for Mbit/s, J for Wh, mW for W).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from decisions.core.csv_table import CsvTable

FIELD = "devices.fleet_file"
"""The spec field that names the file."""

REQUIRED = ("name", "cpu_gmacs", "memory_mb", "battery_wh", "uplink_mbps", "downlink_mbps", "latency_ms",
            "compute_w", "tx_w", "idle_w")
OPTIONAL = ("count", "recharge_w")
FLEET_COLUMNS = (*REQUIRED, *OPTIONAL)
"""The file's columns: required, then optional (``count`` 1, ``recharge_w`` 0)."""

MAX_DEVICES = 10_000
"""Most devices of one row (``Tier.clients``)."""

_RATE_HINT = "the file may be in bit/s or kbit/s, not Mbit/s"
_POWER_HINT = "the file may be in mW, not W"
# column: (tier field, factor to the tier's unit, low, high, refuse the low value itself, hint above high)
_NUMBERS: dict[str, tuple[str, float, float, float, bool, str]] = {
    "cpu_gmacs": ("cpu_macs_per_s", 1e9, 0.0, 10_000.0, True, "the file may be in MAC/s, not GMAC/s"),
    "memory_mb": ("memory_mb", 1.0, 0.0, 1_048_576.0, True, "the file may be in kB or bytes, not MB"),
    "battery_wh": ("battery_j", 3600.0, 0.0, 10_000.0, True, "the file may be in J or mWh, not Wh"),
    "uplink_mbps": ("link_mbps", 1.0, 0.0, 100_000.0, True, _RATE_HINT),
    "downlink_mbps": ("downlink_mbps", 1.0, 0.0, 100_000.0, True, _RATE_HINT),
    "latency_ms": ("latency_ms", 1.0, 0.0, 10_000.0, False, "the file may be in microseconds, not ms"),
    "compute_w": ("power_w_compute", 1.0, 0.0, 1_000.0, True, _POWER_HINT),
    "tx_w": ("power_w_tx", 1.0, 0.0, 1_000.0, True, _POWER_HINT),
    "idle_w": ("idle_w", 1.0, 0.0, 1_000.0, False, _POWER_HINT),
    "recharge_w": ("recharge_w", 1.0, 0.0, 10_000.0, False, "the file may be in mW, not W"),
}
"""Each number column's tier field, unit factor and plausible range (a battery of 10 kWh at most: a
mains-powered board is a large battery with a recharge)."""


def read_fleet(source: str | Path) -> dict[str, dict[str, Any]]:
    """The tiers of a fleet file, by name in file order, as ``Tier`` fields (plain JSON values).

    Raises:
        InputError: on ``devices.fleet_file``: an unreadable file, a missing or unknown column, a bad
            or implausible value or a repeated name (naming the file, row and column), no device.
    """
    table = CsvTable.read(source, field=FIELD, required=REQUIRED, optional=OPTIONAL)
    names = table.text("name")
    first: dict[str, int] = {}
    for index, name in enumerate(names):
        if name in first:
            raise table.refuse(index, "name", f"{name!r} is also the name of row {table.rows[first[name]]}")
        first[name] = index
    counts = table.integers("count", 0, MAX_DEVICES, blank=1) if table.has("count") else [1] * len(table)
    if not sum(counts):
        raise table.refuse_file("it has no device (every count is 0)")
    columns = {}
    for column, (key, factor, low, high, above, hint) in _NUMBERS.items():
        if table.has(column):
            blank = 0.0 if column == "recharge_w" else None
            values = table.numbers(column, low=low, high=high, above=above, blank=blank, unit_hint=hint)
            columns[key] = [float(v) * factor for v in values]
    return {str(name): {"clients": int(counts[i]), **{key: values[i] for key, values in columns.items()}}
            for i, name in enumerate(names)}
