"""A CoMP run never writes into a shipped study: its tables go to the run's folder, its writing stages are refused."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from decisions.errors import InputError
from decisions.kit.shipped import DATA_ENV, shipped_data
from decisions.telecom.comp.study.folder import writable

TASK = "c3-u5-resource_fair-me"


def _shipped_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the shipped study holding one task, made the shipped data (``DECISIONS_DATA``)."""
    source = shipped_data("comp", "trained")
    root = tmp_path / "data"
    study = root / "comp" / "trained"
    for kind, suffix in (("experts", "msgpack"), ("demos", "npz")):
        (study / kind).mkdir(parents=True)
        shutil.copy(source / kind / f"{TASK}.{suffix}", study / kind)
    shutil.copytree(source / "models", study / "models")
    for name in ("evaluation.csv", "conditioning.csv"):
        shutil.copy(source / name, study)
    monkeypatch.setenv(DATA_ENV, str(root))
    return study


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_writing_stages_on_a_shipped_study_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    study = _shipped_copy(tmp_path, monkeypatch)
    for stages in (["data"], ["train", "evaluate"]):
        with pytest.raises(InputError) as err:
            writable(study, stages)
        assert err.value.field == "study.stages" and "shipped" in str(err.value)
    assert writable(study, ["evaluate", "conditioning"]) is False
    assert writable(tmp_path / "mine", ["data", "train", "evaluate"]) is True


@pytest.mark.slow
def test_evaluating_a_shipped_study_leaves_it_byte_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from decisions.platform import registry
    from decisions.platform.record import execute_domain
    from decisions.store import dispose_engines, get_run

    study = _shipped_copy(tmp_path, monkeypatch)
    before = _digests(study)
    domain = registry.get("comp")
    spec = {"job": {"kind": "comp", "name": "readonly"},
            "study": {"folder": "shipped:comp/trained", "stages": ["evaluate"], "eval_episodes": 2,
                      "sizes": ["small"]},
            "tasks": {"train": [TASK], "unseen": []}}
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    try:
        run_id = execute_domain(domain, domain.prepare(spec, tmp_path), url=url)
        run = get_run(run_id, url=url)
    finally:
        dispose_engines()
    assert _digests(study) == before
    evaluation = Path(next(a.path for a in run.artifacts if a.name == "evaluation"))
    assert evaluation.is_file() and study not in evaluation.parents
    assert TASK in evaluation.read_text()


def test_a_spec_whose_stages_would_write_into_the_shipped_study_is_refused_before_any_work() -> None:
    from decisions.telecom.comp.spec import prepare

    spec = {"job": {"name": "readonly"}, "study": {"folder": "shipped:comp/trained", "stages": ["data", "evaluate"]}}
    with pytest.raises(InputError) as err:
        prepare(spec)
    assert err.value.field == "study.stages" and "shipped" in str(err.value)
    assert prepare({**spec, "study": {**spec["study"], "stages": ["evaluate"]}}).study.stages
