"""What the processes of the store's concurrency tests run: a light module (only ``decisions.store``),
since each spawned process imports it afresh."""

from __future__ import annotations

from typing import Any

from decisions.store import artifacts, recorded_run

RUNS_PER_WRITER = 25
METRICS_PER_RUN = 4


def record_runs(url: str, root: str, writer: int, barrier: Any) -> None:
    """Record ``RUNS_PER_WRITER`` runs named ``w<writer>-<i>``, each with ``METRICS_PER_RUN`` metrics at
    step ``i`` and one artifact file (its name as bytes) written below ``root`` and recorded with its URL.

    Args:
        url: The run store.
        root: The artifacts root URL.
        writer: This process's number.
        barrier: Waited on first, so that every process starts writing at once.
    """
    barrier.wait(timeout=120)
    for i in range(RUNS_PER_WRITER):
        with recorded_run("stress", f"w{writer}-{i}", {"writer": writer, "i": i}, url=url) as run:
            run.log_metrics({f"m{k}": float(k * i) for k in range(METRICS_PER_RUN)}, step=i)
            target = artifacts.join(root, f"run-{run.run_id}", "out.txt")
            artifacts.write_bytes(target, f"w{writer}-{i}".encode())
            run.add_artifact("out", artifacts.local_path(target), location=target)
