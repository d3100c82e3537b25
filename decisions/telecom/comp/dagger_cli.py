"""Command line of the DAgger ablation (``study.dagger_ablation``) on a job spec's study.

``python -m decisions.telecom.comp.dagger_cli --spec examples/comp_joint.toml --checkpoints RUN/checkpoints``
exports the stages (with ``--checkpoints``), scores them, writes ``<folder>/dagger_ablation.csv`` and prints
the summary.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from decisions.errors import InputError
from decisions.kit.spec import SpecError, load_toml
from decisions.telecom.comp.spec import prepare
from decisions.telecom.comp.study.dagger_ablation import TABLE, export_stages, score_stages, stage_summary
from decisions.telecom.comp.study.folder import evaluation_table


def run(spec: Path, checkpoints: Path | None = None, episodes: int | None = None) -> pd.DataFrame:
    """Export the stages (with ``checkpoints``), score them, write ``<folder>/dagger_ablation.csv``; return the
    table. At the spec's episodes, random, the experts and the final models are read from the study's
    ``evaluation.csv`` (played on the same keys) when it exists.

    Raises:
        InputError: a bad field of the spec, or (``checkpoints``) a model without its training checkpoint.
        SpecError: the spec cannot be read.
    """
    job = prepare(load_toml(spec), spec.parent)
    folder = Path(job.study.folder).resolve()
    if checkpoints is not None:
        for path in export_stages(checkpoints, folder):
            print(f"wrote {path}")
    train, unseen = job.tasks.resolve()
    episodes = episodes or job.study.eval_episodes
    evaluation = evaluation_table(folder)
    reuse = evaluation.exists() and episodes == job.study.eval_episodes  # the same episode keys
    table = score_stages(folder, train, unseen, episodes, evaluation=pd.read_csv(evaluation) if reuse else None)
    table.to_csv(folder / TABLE, index=False)
    return table


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: ``run``, then print the summary; bad input exits 2 with one line on stderr."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", type=Path, required=True, help="the study's job spec (its folder and tasks)")
    parser.add_argument("--checkpoints", type=Path, help="the training run's checkpoints folder (exports the stages)")
    parser.add_argument("--episodes", type=int, help="episodes per policy and network (default: the spec's)")
    args = parser.parse_args(argv)
    try:
        table = run(args.spec, args.checkpoints, args.episodes)
    except (InputError, SpecError) as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    with pd.option_context("display.width", 200, "display.precision", 3):
        print(stage_summary(table))


if __name__ == "__main__":
    main()
