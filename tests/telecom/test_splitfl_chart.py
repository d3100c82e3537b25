"""The split learning accuracy chart: one colour per strategy, the target accuracy drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from decisions.telecom.splitfl import report

NAMES = ["dqn_round", "dqn_client", "fedavg", *(f"fixed_split_{k}" for k in range(1, 10)), "greedy", "fastest"]


def _rounds() -> pd.DataFrame:
    return pd.DataFrame([{"seed": seed, "strategy": name, "round": r, "wall_clock_s": (r + 1) * (5.0 + i),
                          "test_acc": 0.05 * r + 0.01 * i}
                         for seed in (0, 1) for i, name in enumerate(NAMES) for r in range(6)])


def test_fourteen_strategies_get_fourteen_colours_and_the_target_line(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[Any] = []

    def keep(fig: Any, path: Path) -> Path:
        drawn.append(fig)
        return path

    monkeypatch.setattr(report, "save_figure", keep)
    report.accuracy_chart(_rounds(), tmp_path / "accuracy.png", target=0.62)
    [ax] = drawn[0].axes
    curves = [line for line in ax.get_lines() if line.get_label() in NAMES]
    assert [line.get_label() for line in curves] == NAMES  # the first seed's strategies, each once
    assert len({line.get_color() for line in curves}) == len(NAMES)
    [target] = [line for line in ax.get_lines() if line.get_label().startswith("target")]
    assert set(target.get_ydata()) == {0.62}
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert legend == [*NAMES, "target 0.620"]


def test_the_target_is_kept_with_the_report(tmp_path: Path) -> None:
    rounds = _rounds()
    saved = report.SplitFLReport(summary=pd.DataFrame({"strategy": NAMES}), runs=pd.DataFrame({"seed": [0]}),
                                 rounds=rounds, clients=pd.DataFrame({"client": [0]}), target_accuracy=0.62)
    files = saved.save(tmp_path)
    assert files["chart"].stat().st_size > 10_000
    assert report.SplitFLReport.load(tmp_path).target_accuracy == pytest.approx(0.62)
