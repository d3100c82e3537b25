"""``Heartbeat``: a daemon thread that keeps renewing a running run's ``heartbeat_at``; a beat that
cannot be written is skipped, the run goes on.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType

from decisions.store.lifecycle import beat
from decisions.store.liveness import heartbeat_interval

log = logging.getLogger(__name__)


class Heartbeat:
    """Renew one run's heartbeat every ``interval_s`` seconds (None: ``heartbeat_interval()``) from
    ``start()`` to ``stop()``, or as a context manager."""

    def __init__(self, run_id: int, *, url: str | None = None, interval_s: float | None = None) -> None:
        self.run_id = run_id
        self.url = url
        self.interval_s = heartbeat_interval() if interval_s is None else interval_s
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._beat_until_stopped, name=f"heartbeat-run-{run_id}", daemon=True)

    def _beat_until_stopped(self) -> None:
        while not self._stopped.wait(self.interval_s):
            try:
                if not beat(self.run_id, url=self.url):
                    return  # the run has finished (or is gone): nothing left to keep alive
            except Exception:  # a missed beat must never break the run
                log.debug("heartbeat of run %s not written", self.run_id, exc_info=True)

    def start(self) -> Heartbeat:
        """Start beating (the first beat comes after one interval: ``start_run`` wrote the first)."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop beating; waits up to one interval for a beat in progress."""
        self._stopped.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.interval_s)

    def __enter__(self) -> Heartbeat:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
