"""libsumo's notices ("Using libsumo as traci", the pyarrow version warning) are printed once per run, by the
main process, not again by every spawned simulation process."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("libsumo") is None or importlib.util.find_spec("sumo_rl") is None,
    reason="needs eclipse-sumo with libsumo and sumo-rl",
)

SCRIPT = """
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from tests.ops.test_sumo_notices import import_sumo_rl
import_sumo_rl(0)
with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
    print("worker processes:", len(set(pool.map(import_sumo_rl, range(4)))))
"""


def import_sumo_rl(index: int) -> int:
    """Import sumo-rl as the traffic domain does (``ensure_sumo`` first); this process's id."""
    import os

    from decisions.mobility.traffic.sumo_setup import ensure_sumo

    ensure_sumo()
    import sumo_rl  # noqa: F401

    time.sleep(0.2 if index else 0.0)  # keep a worker busy so that both start
    return os.getpid()


@pytest.mark.slow  # three processes importing sumo-rl: 5 to 20 s
def test_libsumo_notices_appear_once_with_spawned_simulations() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    output = done.stdout + done.stderr
    assert "worker processes: 2" in output, output
    assert output.count("Using libsumo as traci") == 1, output
    assert output.count("Warning! pyarrow") <= 1, output
