"""The controller contract shared by the baselines (and by learned policies run as baselines)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from decisions.mobility.traffic.env import EpisodeSpec

__all__ = ["BaseController", "Controller", "choose_phase"]


@runtime_checkable
class Controller(Protocol):
    """A signal controller acting through sumo-rl's action space.

    Attributes:
        name: short name for reports.
        fixed_ts: run sumo-rl with ``fixed_ts=True`` (SUMO runs the active programme itself).
    """

    name: str
    fixed_ts: bool

    def additional_files(self, spec: EpisodeSpec) -> tuple[Path, ...]:
        """SUMO additional files this controller needs (written next to ``spec.tripinfo``)."""
        ...

    def reset(self, env: Any) -> None:
        """Prepare for an episode; called after ``env.reset()``."""
        ...

    def act(self, env: Any) -> dict[str, int]:
        """An action (green-phase index) for every signal of ``env``."""
        ...


class BaseController:
    """Defaults: no additional files, nothing to reset, keep every signal's current phase."""

    name = "base"
    fixed_ts = False

    def additional_files(self, spec: EpisodeSpec) -> tuple[Path, ...]:
        """No additional files."""
        del spec
        return ()

    def reset(self, env: Any) -> None:
        """Nothing to prepare."""
        del env

    def act(self, env: Any) -> dict[str, int]:
        """Keep each signal's current green phase."""
        return {ts_id: int(ts.green_phase) for ts_id, ts in env.traffic_signals.items()}


def choose_phase(ts: Any, scores: Sequence[float]) -> int:
    """Best-scoring phase; ties keep the current phase, then prefer more green links, then order."""
    best = max(scores)
    ties = [i for i, s in enumerate(scores) if s >= best - 1e-9]
    if ts.green_phase in ties:
        return int(ts.green_phase)
    return max(ties, key=lambda i: (sum(ch in "Gg" for ch in ts.green_phases[i].state), -i))
