"""The result of a pharma job: tidy tables, headline metrics, CSV files and PNG charts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from decisions.kit.report import TablesReport, pyplot, save_figure
from decisions.kit.run_files import policy_files

METHOD_ORDER = ("snapo", "best_constant", "nominal")
"""Operating points a report may hold, in display order."""


@dataclass(kw_only=True)
class PharmaTables:
    """The tables of a pharma study, which its report holds and saves.

    Attributes:
        comparison: one row per operating point (index ``method``: ``snapo`` and
            ``best_constant`` when SNAPO ran, else ``nominal``, the scenario's CPPs with flat
            profiles) with ``mean_yield`` (%), ``compliance`` (share of fresh draws meeting every
            specification), ``nominal_meets`` and the seven CPPs.
        cqa: one row per (``method``, ``cqa``): ``unit``, ``low``, ``high`` (specification
            limits, NaN where none), ``nominal`` (at the nominal constants), ``meets`` (hard
            check at the nominal constants), ``mean`` (over the fresh draws).
        profiles: temperature set points per profile segment: ``method, unit, segment,
            start_h, end_h, temperature_start, temperature_end``.
        trajectories: one chain run per method at the nominal constants, long format:
            ``method, unit, time_h`` (within the unit), ``batch_time_h`` (from the reactor
            start), ``variable, value`` (see ``trajectories.ChainFrames`` for the variables).
        filtration: one row per method: ``method`` and the filter/wash outputs.
        sensitivity: the CQA x CPP Jacobian in long format: ``cqa, cpp, value`` (CQA units per
            CPP unit), ``scaled`` (value over the row's largest magnitude, in [-1, 1]),
            ``cross_unit`` and ``structural_zero``; empty when not computed.
        design_space: columns ``<cpp_x>, <cpp_y>, probability`` (named after the two CPPs);
            empty when not computed.
        training_curve: SNAPO training log (``step, value, grad_norm, temperature``) or None.
    """

    comparison: pd.DataFrame
    cqa: pd.DataFrame
    profiles: pd.DataFrame
    trajectories: pd.DataFrame
    filtration: pd.DataFrame
    sensitivity: pd.DataFrame
    design_space: pd.DataFrame
    training_curve: pd.DataFrame | None = None


@dataclass(kw_only=True)
class PharmaReport(TablesReport, PharmaTables):
    """Everything a pharma run produced: the study's tables (``PharmaTables``) and the fields below.

    Attributes:
        metrics: headline figures (floats) recorded in the run store.
        result: the ``OptimisedProfiles`` when SNAPO ran (saved as ``snapo_profiles.msgpack``).
        compliance_target: compliance required on fresh draws (drawn on the design-space map).
        scenario: the run's validated scenario, what deciding on its operating points needs (saved as
            ``scenario.json``, not reloaded by ``load``).
    """

    result: Any = None
    compliance_target: float = 0.95
    scenario: Any = None

    def save_files(self, directory: Path) -> dict[str, Path]:
        """Write the charts (``chart``, ``sensitivity_chart``, ``design_space_chart``, PNG), the scenario
        (``scenario``, JSON) and, when SNAPO ran, its profiles (``snapo_profiles``, msgpack)."""
        from decisions.health.pharma.snapo_policy import save_profiles

        return {**save_charts(self, directory),
                **policy_files(directory, "snapo_profiles", self.result, save_profiles, self.scenario)}


def sensitivity_long(jacobian: pd.DataFrame, cross_unit: np.ndarray, structural_zero: np.ndarray) -> pd.DataFrame:
    """The Jacobian table (rows CQAs, columns CPPs) in long format with a row-scaled value.

    Args:
        jacobian: rows CQAs, columns CPPs.
        cross_unit: ``(n_cqa, n_cpp)`` mask of cross-unit entries.
        structural_zero: ``(n_cqa, n_cpp)`` mask of entries no path can carry.

    Returns:
        ``cqa, cpp, value, scaled, cross_unit, structural_zero``, CQA-major.
    """
    values = jacobian.to_numpy(float)
    biggest = np.max(np.abs(values), axis=1, keepdims=True)
    scaled = np.divide(values, biggest, out=np.zeros_like(values), where=biggest > 0)
    n_cqa, n_cpp = values.shape
    return pd.DataFrame(
        {
            "cqa": np.repeat(jacobian.index.to_numpy(), n_cpp),
            "cpp": np.tile(jacobian.columns.to_numpy(), n_cqa),
            "value": values.ravel(),
            "scaled": scaled.ravel(),
            "cross_unit": np.asarray(cross_unit, bool).ravel(),
            "structural_zero": np.asarray(structural_zero, bool).ravel(),
        }
    )


def save_charts(report: PharmaReport, directory: Path) -> dict[str, Path]:
    """Draw the profiles, the sensitivity heat map and the design-space map (those present) to PNGs."""
    plt = pyplot()

    written = {"chart": _profiles_png(report, directory / "pharma_profiles.png", plt)}
    if not report.sensitivity.empty:
        written["sensitivity_chart"] = _sensitivity_png(report.sensitivity, directory / "sensitivity.png", plt)
    if not report.design_space.empty:
        written["design_space_chart"] = _design_space_png(report, directory / "design_space.png", plt)
    return written


def _profiles_png(report: PharmaReport, path: Path, plt: Any) -> Path:
    """Temperature of each unit over its own time, one line per operating point."""
    temps = report.trajectories[report.trajectories["variable"] == "temperature"]
    units = ("reactor", "crystalliser", "dryer")
    fig, axes = plt.subplots(1, len(units), figsize=(13, 3.8), constrained_layout=True)
    for ax, unit in zip(axes, units, strict=True):
        for method in ordered_methods(temps["method"]):
            rows = temps[(temps["unit"] == unit) & (temps["method"] == method)]
            ax.plot(rows["time_h"], rows["value"], label=method.replace("_", " "))
        ax.set_title(f"{unit} temperature")
        ax.set_xlabel("time in unit, h")
        ax.set_ylabel("temperature, C")
    axes[0].legend(fontsize=8)
    return save_figure(fig, path)


def _sensitivity_png(sensitivity: pd.DataFrame, path: Path, plt: Any) -> Path:
    """Heat map of the row-scaled CQA x CPP sensitivities, annotated with the raw values."""
    scaled = sensitivity.pivot(index="cqa", columns="cpp", values="scaled")
    raw = sensitivity.pivot(index="cqa", columns="cpp", values="value")
    rows = list(dict.fromkeys(sensitivity["cqa"]))
    cols = list(dict.fromkeys(sensitivity["cpp"]))
    scaled, raw = scaled.loc[rows, cols], raw.loc[rows, cols]
    fig, ax = plt.subplots(figsize=(11, 4.6), constrained_layout=True)
    image = ax.imshow(scaled.to_numpy(), cmap="RdBu_r", vmin=-1.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(cols)), [c.replace("_", "\n") for c in cols], fontsize=8)
    ax.set_yticks(range(len(rows)), rows)
    for i in range(len(rows)):
        for j in range(len(cols)):
            ax.text(j, i, f"{raw.iat[i, j]:.3g}", ha="center", va="center", fontsize=7)
    fig.colorbar(image, ax=ax, label="d CQA / d CPP, scaled by the row's largest")
    ax.set_title("ICH Q8 sensitivities of the CQAs to the CPPs (one reverse pass)")
    return save_figure(fig, path)


def _design_space_png(report: PharmaReport, path: Path, plt: Any) -> Path:
    """Probability of meeting every specification over the two CPPs, with the target contour."""
    frame = report.design_space
    x_name, y_name = design_space_axes(frame)
    grid = frame.pivot(index=y_name, columns=x_name, values="probability").sort_index()
    fig, ax = plt.subplots(figsize=(7, 5.2), constrained_layout=True)
    xs, ys = grid.columns.to_numpy(float), grid.index.to_numpy(float)
    mesh = ax.pcolormesh(xs, ys, grid.to_numpy(), cmap="viridis", vmin=0.0, vmax=1.0, shading="nearest")
    if len(xs) > 1 and len(ys) > 1:
        ax.contour(xs, ys, grid.to_numpy(), levels=[report.compliance_target], colors="white", linewidths=1.5)
    method = ordered_methods(report.comparison.index)[0]
    point = report.comparison.loc[method]
    ax.plot(point[x_name], point[y_name], marker="*", color="red", markersize=12, label=method.replace("_", " "))
    ax.legend(loc="upper right", fontsize=8)
    fig.colorbar(mesh, ax=ax, label="P(every specification met)")
    ax.set_xlabel(x_name)
    ax.set_ylabel(y_name)
    ax.set_title(f"Design space (white: {report.compliance_target:.0%} contour)")
    return save_figure(fig, path)


def design_space_axes(frame: pd.DataFrame) -> tuple[str, str]:
    """The two CPP names of a design-space table (its columns other than ``probability``)."""
    x_name, y_name = (column for column in frame.columns if column != "probability")
    return str(x_name), str(y_name)


def ordered_methods(methods: Any) -> list[str]:
    """The distinct methods of a column or index, in ``METHOD_ORDER`` (unknown ones last)."""
    present = list(dict.fromkeys(str(m) for m in methods))
    rank = {name: i for i, name in enumerate(METHOD_ORDER)}
    return sorted(present, key=lambda m: rank.get(m, len(rank)))
