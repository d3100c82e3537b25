"""The CoMP study pipeline and job: a tiny end-to-end run (experts -> data -> models -> evaluation),
the headline figures from a hand-made table, and bad job specs naming the field."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decisions.core.checkpoint import load_metadata
from decisions.errors import InputError
from decisions.kit.parts import parts_runner
from decisions.platform.record import execute_domain
from decisions.platform.registry import get
from decisions.platform.runner import SerialRunner
from decisions.store import RunStatus, dispose_engines, get_run
from decisions.telecom.comp import DOMAIN
from decisions.telecom.comp import spec as comp_spec
from decisions.telecom.comp.dt.datasets import OfflineDataset
from decisions.telecom.comp.report import CompReport
from decisions.telecom.comp.sim.catalog import (
    JOINT_TRAINING_TASKS,
    JOINT_UNSEEN_TASKS,
    TRAINING_TASKS,
    UNSEEN_TASKS,
)
from decisions.telecom.comp.study.budget import StudyBudget
from decisions.telecom.comp.study.context import StudyContext
from decisions.telecom.comp.study.folder import joint_study, shipped_study
from decisions.telecom.comp.study.scoring import conditioning_spread, headline, normalise
from decisions.telecom.comp.study.stages import (
    expert_part,
    generate_data,
    run_study,
    ship_study,
    train_experts,
)
from tests.helpers import assert_input_error

TINY = StudyBudget(
    expert_steps=3_200,
    multitask_steps=3_200,
    episodes_per_behaviour=2,
    expert_episodes=2,
    demo_episodes=2,
    dt_steps=3,
    dt_batch=4,
    sizes=("small",),
    eval_episodes=2,
    demonstrator="best",
    select_episodes=2,
)
TRAIN, UNSEEN = [TRAINING_TASKS[0]], [UNSEEN_TASKS[3]]


def _row(task: str, split: str, policy: str, qoe: float) -> dict[str, object]:
    return {"task": task, "split": split, "policy": policy, "qoe": qoe, "jain_qoe": 0.9, "return_mean": 0.0}


def test_headline_from_a_known_table() -> None:

    rows = []
    for task, split, scores in (
        ("a", "train", {"random": 0.3, "max_snr": 0.5, "top2": 0.45, "expert": 0.6, "multitask_ppo": 0.4,
                        "dt": 0.5, "promptdt-small": 0.54, "promptdt-medium": 0.57, "planner": 0.7}),
        ("b", "unseen", {"random": 0.2, "max_snr": 0.4, "top2": 0.4, "expert": 0.5, "multitask_ppo": 0.3,
                         "dt": 0.3, "promptdt-small": 0.45, "promptdt-medium": 0.46}),
    ):
        rows += [_row(task, split, p, q) for p, q in scores.items()]
    table = normalise(pd.DataFrame(rows))
    a = table[table.task == "a"].set_index("policy")["normalised_qoe"]
    assert a["random"] == pytest.approx(0.0) and a["expert"] == pytest.approx(1.0)
    assert a["promptdt-medium"] == pytest.approx(0.9)
    figures = headline(table, ("small", "medium"))
    assert figures["promptdt_vs_multitask_ppo"] == pytest.approx(0.9 / (1 / 3))
    assert figures["promptdt_beats_baselines"] == 1.0  # 0.9 >= max_snr's 0.667, dt's 0.667; the planner is a reference
    assert figures["normalised_qoe_planner"] == pytest.approx(4 / 3)  # above the expert: not part of the normalisation
    assert figures["planner_vs_multitask_ppo"] == pytest.approx((4 / 3) / (1 / 3))
    # unseen task b: random 0.2, best reference the expert's 0.5, so PromptDT-medium (the best size on
    # the training tasks) normalises to 0.26 / 0.3; raw ratios come with random's beside them
    assert figures["unseen_normalised_qoe_promptdt-medium"] == pytest.approx(0.26 / 0.3)
    assert figures["unseen_median_normalised_qoe_promptdt-medium"] == pytest.approx(0.26 / 0.3)
    assert figures["unseen_normalised_vs_expert"] == pytest.approx(0.26 / 0.3)
    assert figures["unseen_normalised_vs_multitask_ppo"] == pytest.approx((0.26 / 0.3) / (0.1 / 0.3))
    assert figures["unseen_qoe_vs_expert"] == pytest.approx(0.46 / 0.5)
    assert figures["unseen_qoe_vs_expert_random"] == pytest.approx(0.2 / 0.5)
    assert figures["unseen_qoe_vs_multitask_ppo_random"] == pytest.approx(0.2 / 0.3)
    assert figures["unseen_min_qoe_gap"] == pytest.approx(0.3)
    assert figures["unseen_normalised_non_decreasing_with_size"] == 1.0
    assert "unseen_vs_expert" not in figures
    assert figures["qoe_non_decreasing_with_size"] == 1.0
    # issue 25's scale, 0 random and 1 the network's own expert: on b the expert is also the best
    assert figures["promptdt_vs_expert_unseen"] == pytest.approx(0.26 / 0.3)
    assert figures["promptdt_vs_expert_unseen_worst"] == pytest.approx(0.26 / 0.3)
    assert figures["promptdt_vs_multitask_ppo_unseen"] == pytest.approx(0.26 / 0.1)
    assert figures["promptdt_vs_multitask_ppo_unseen_worst"] == pytest.approx(0.26 / 0.1)
    assert figures["expert_normalised_qoe_planner"] == pytest.approx(4 / 3)  # on a, the expert is also the best
    assert figures["raw_qoe_max_snr"] == pytest.approx(0.5) and figures["unseen_raw_qoe_top2"] == pytest.approx(0.4)
    beaten = table.copy()  # where a heuristic beats the expert, the two scales part
    beaten.loc[(beaten.policy == "max_snr") & (beaten.task == "b"), "qoe"] = 0.8
    own = headline(normalise(beaten.drop(columns=["normalised_qoe", "expert_normalised_qoe"])), ("small", "medium"))
    assert own["promptdt_vs_expert_unseen"] == pytest.approx(0.26 / 0.3)
    assert own["unseen_normalised_vs_expert"] == pytest.approx((0.26 / 0.6) / (0.3 / 0.6))
    assert own["unseen_expert_normalised_qoe_max_snr"] == pytest.approx(0.6 / 0.3)
    worse = table.copy()
    worse.loc[(worse.policy == "promptdt-medium") & (worse.task == "a"), ["qoe", "normalised_qoe"]] = [0.5, 0.6]
    assert headline(worse, ("small", "medium"))["qoe_non_decreasing_with_size"] == 0.0
    assert figures["unseen_expert_normalised_non_decreasing_with_size"] == 1.0  # b: small 0.25 / 0.3, medium 0.26 / 0.3
    swapped = table.copy()
    swapped.loc[(swapped.policy == "promptdt-small") & (swapped.task == "b"), "qoe"] = 0.48
    swapped = normalise(swapped.drop(columns=["normalised_qoe", "expert_normalised_qoe"]))
    assert headline(swapped, ("small", "medium"))["unseen_expert_normalised_non_decreasing_with_size"] == 0.0
    assert not any("rate_mbps" in k for k in figures)  # a table written before the rates were measured
    rated = table.assign(mean_rate_mbps=lambda t: 10 * t.qoe, edge_rate_mbps=lambda t: t.qoe, below_floor=0.1)
    rates = headline(rated, ("small", "medium"))
    assert rates["mean_rate_mbps_promptdt-medium"] == pytest.approx(5.7)  # training network a
    assert rates["unseen_edge_rate_mbps_max_snr"] == pytest.approx(0.4) and rates["unseen_below_floor_random"] == 0.1


def test_conditioning_spread_from_a_known_table(tmp_path: Path) -> None:
    table = pd.DataFrame({
        "task": ["a", "b", "a", "b", "a", "b", "a", "b"],
        "policy": ["m"] * 4 + ["n"] * 4,
        "offset": [0.0, 0.0, 10.0, 10.0] * 2,
        "return_mean": [1.0, 3.0, 2.0, 6.0, 5.0, 5.0, 5.0, 5.0],
    })
    # m: mean 2 at offset 0, 4 at offset 10 -> spread 2; n ignores the target -> 0
    assert conditioning_spread(table) == {"conditioning_return_spread_m": 2.0, "conditioning_return_spread_n": 0.0}
    # a conditioning-only run saves its table and chart, no evaluation
    written = CompReport(metrics={}, conditioning=table).save(tmp_path)
    assert set(written) == {"conditioning", "conditioning_chart", "report"}
    # the chart's reference lines: the folder's evaluation returns on the conditioning tasks only
    folder = tmp_path / "study"
    folder.mkdir()
    rows = [_row(task, "train", policy, 0.5) for task in ("a", "b", "c") for policy in ("expert", "max_snr", "top2")]
    evaluation = pd.DataFrame(rows).assign(return_mean=[1.0, 2.0, 9.0, 3.0, 4.0, 9.0, 50.0, 50.0, 9.0])
    evaluation.to_csv(folder / "evaluation.csv", index=False)
    report = CompReport(metrics={}, folder=folder, conditioning=table)
    assert report.conditioning_references() == {"expert": 2.0, "max_snr": 3.0}
    assert pd.read_csv(written["conditioning"]).equals(table) and written["conditioning_chart"].stat().st_size > 0
    with pytest.raises(ValueError, match="target_offsets"):
        StudyBudget(target_offsets=())


def test_choose_demonstrator_takes_the_better_policy_on_common_episodes() -> None:
    from decisions.telecom.comp.policies.heuristics import SERVING_SET_POLICIES
    from decisions.telecom.comp.policies.rollouts import evaluate_policy
    from decisions.telecom.comp.study.scoring import choose_demonstrator

    task = TRAINING_TASKS[1]  # c7-u15 resource-fair: max-SNR beats random by a wide margin
    policies = {"random": SERVING_SET_POLICIES["random"], "max_snr": SERVING_SET_POLICIES["max_snr"]}
    returns = {n: evaluate_policy(task, p, 4, seed=3)["return_mean"] for n, p in policies.items()}
    assert choose_demonstrator(task, policies, 4, seed=3) == max(returns, key=lambda n: returns[n]) == "max_snr"
    same = {"first": policies["max_snr"], "second": policies["max_snr"]}
    assert choose_demonstrator(task, same, 4, seed=3) == "first"  # a tie goes to the first
    with pytest.raises(ValueError, match="demonstrator"):
        StudyBudget(demonstrator="oracle")
    with pytest.raises(ValueError, match="select_episodes"):
        StudyBudget(select_episodes=1)


def _spec(**sections: object) -> dict[str, object]:
    return {"job": {"kind": "comp", "name": "study"}, **sections}


def test_prepare_names_the_bad_field(tmp_path: Path) -> None:
    job = comp_spec.prepare(_spec(study={"folder": "s"}), tmp_path)
    assert Path(job.study.folder) == tmp_path / "s" and get("comp") is DOMAIN
    assert job.study.budget().expert_steps == StudyBudget().expert_steps
    for spec, field in (
        ({"study": {"sizes": ["huge"]}}, "study.sizes"),
        ({"study": {"stages": ["fly"]}}, "study.stages.0"),
        ({"study": {"eval_episodes": 1}}, "study.eval_episodes"),
        ({"study": {"user_layers": -1}}, "study.user_layers"),
        ({"study": {"user_ids": "yes"}}, "study.user_ids"),
        ({"study": {"dt_learning_rate": 0.0}}, "study.dt_learning_rate"),
        ({"study": {"demonstrator": "oracle"}}, "study.demonstrator"),
        ({"study": {"select_episodes": 1}}, "study.select_episodes"),
        ({"study": {"warm_start": "oracle"}}, "study.warm_start"),
        ({"study": {"conditioning": "luck"}}, "study.conditioning"),
        ({"study": {"dagger_rounds": 2}}, "study.dagger_rounds"),  # DAgger labels with the planner only
        ({"tasks": {"train": ["c99-u1"]}}, "tasks.train"),
        ({"tasks": {"unseen": [TRAINING_TASKS[0].name]}}, "tasks.unseen"),
        ({"study": {"stages": ["train"]}}, "study.stages"),  # no data in the folder yet
        ({"study": {"stages": ["evaluate"], "folder": "x"}}, "study.stages"),
        ({"study": {"stages": ["conditioning"], "folder": "x"}}, "study.stages"),  # no models there
        ({"study": {"target_offsets": []}}, "study.target_offsets"),
        ({"study": {"target_offsets": [0.0, float("nan")]}}, "study.target_offsets.1"),
        ({"job": {"seed": -1}}, "job.seed"),
    ):
        assert_input_error(comp_spec.prepare, {**_spec(), **spec}, tmp_path, field=field)


@pytest.mark.slow  # every stage's compile (experts, multi-task PPO, DTs, evaluation): minutes on 2 cores
def test_tiny_recorded_study_runs_every_stage_and_resumes(tmp_path: Path) -> None:
    """One tiny study through the job: experts, data, models, evaluation on common random numbers."""
    folder = tmp_path / "study"
    study = {**TINY.__dict__, "sizes": list(TINY.sizes), "folder": str(folder)}
    tasks = {"train": [t.name for t in TRAIN], "unseen": [t.name for t in UNSEEN]}
    job = comp_spec.prepare(_spec(study=study, tasks=tasks), tmp_path)
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    try:
        run_id = execute_domain(DOMAIN, job, url=url)
        record = get_run(run_id, url=url)
        assert record.status == RunStatus.SUCCEEDED and record.kind == DOMAIN.name
        artifacts = {a.name: Path(a.path) for a in record.artifacts}
        assert {"evaluation", "chart"} <= set(artifacts)
        assert np.isfinite(record.latest_metrics()["promptdt_vs_multitask_ppo"])
        assert "experts_seconds" in record.latest_metrics()
    finally:
        dispose_engines()
    assert (folder / "experts" / f"{UNSEEN[0].name}.msgpack").exists()
    assert (folder / "data" / f"{TRAIN[0].name}.npz").exists() and (folder / "demos" / f"{UNSEEN[0].name}.npz").exists()
    assert {p.name for p in (folder / "models").iterdir()} == {"promptdt-small.msgpack", "dt.msgpack", "multitask_ppo.msgpack"}
    assert not list(folder.rglob("*.partial*"))
    # each task's data and demonstrations come from its chosen demonstrator (plus the weaker behaviours)
    metrics = record.latest_metrics()
    demo_names = {t.name: set(OfflineDataset.load(folder / "demos" / f"{t.name}.npz").behaviour) for t in (*TRAIN, *UNSEEN)}
    assert all(len(names) == 1 and names <= {"expert", "multitask_ppo"} for names in demo_names.values())
    assert metrics["multitask_demonstrated_tasks"] == sum(names == {"multitask_ppo"} for names in demo_names.values())
    data = OfflineDataset.load(folder / "data" / f"{TRAIN[0].name}.npz")
    assert demo_names[TRAIN[0].name] <= set(data.behaviour) and {"max_snr", "random"} <= set(data.behaviour)
    assert pd.read_csv(folder / "evaluation.csv").shape == pd.read_csv(artifacts["evaluation"]).shape
    table = pd.read_csv(artifacts["evaluation"])
    assert set(table.policy) == {"expert", "multitask_ppo", "max_snr", "top2", "random", "planner", "promptdt-small", "dt"}
    assert set(table.split) == {"train", "unseen"} and table[["qoe", "jain_qoe"]].notna().all().all()
    assert ((table.qoe >= 0) & (table.qoe <= 1)).all()
    # common random numbers: max-SNR's QoE equals a fresh evaluation on the same seed
    from decisions.telecom.comp.policies.heuristics import SERVING_SET_POLICIES
    from decisions.telecom.comp.policies.rollouts import evaluate_policy
    from decisions.telecom.comp.study.scoring import EVAL_SEED

    again = evaluate_policy(TRAIN[0], SERVING_SET_POLICIES["max_snr"], TINY.eval_episodes, seed=EVAL_SEED)
    row = table[(table.task == TRAIN[0].name) & (table.policy == "max_snr")]
    assert float(row.qoe.iloc[0]) == pytest.approx(again["qoe"], rel=1e-6)
    # with the planner as demonstrator, every task's data and prompts are the planner's (beside the weaker behaviours)
    planned = tmp_path / "planned"
    shutil.copytree(folder / "experts", planned / "experts")
    chosen = generate_data(StudyContext(planned, replace(TINY, demonstrator="planner"), TRAIN, UNSEEN))
    assert set(chosen.values()) == {"planner"}
    assert all(set(OfflineDataset.load(planned / "demos" / f"{t.name}.npz").behaviour) == {"planner"} for t in (*TRAIN, *UNSEEN))
    assert {"planner", "expert", "max_snr"} <= set(OfflineDataset.load(planned / "data" / f"{TRAIN[0].name}.npz").behaviour)
    # a later stage alone reuses the folder; an existing expert is kept, not retrained
    stamp = (folder / "experts" / f"{TRAIN[0].name}.msgpack").stat().st_mtime_ns
    table2 = run_study(StudyContext(folder, TINY, TRAIN, UNSEEN), ("data", "evaluate")).table
    assert (folder / "experts" / f"{TRAIN[0].name}.msgpack").stat().st_mtime_ns == stamp
    # ... and so are its data, demonstrations and models: a stopped study goes on from its files
    kept = [folder / "data" / f"{TRAIN[0].name}.npz", folder / "demos" / f"{UNSEEN[0].name}.npz",
            *sorted((folder / "models").glob("*.msgpack"))]
    stamps = [path.stat().st_mtime_ns for path in kept]
    assert run_study(StudyContext(folder, TINY, TRAIN, UNSEEN), ("data", "train")).figures.get(
        "train_seconds_promptdt-small") is None
    assert [path.stat().st_mtime_ns for path in kept] == stamps
    assert table2 is not None and len(table2) == len(table)
    # the conditioning stage: every (Prompt-)DT on every training task at every offset, the target
    # the best demonstration's return plus the offset; offset 0 is the evaluation's own episodes
    offsets = (0.0, 5.0)
    result = run_study(StudyContext(folder, replace(TINY, target_offsets=offsets), TRAIN), ("conditioning",))
    figures, cond = result.figures, pd.read_csv(folder / "conditioning.csv")
    assert result.table is None and result.conditioning is not None and len(result.conditioning) == len(cond)
    assert len(cond) == len(TRAIN) * 2 * len(offsets) and set(cond.policy) == {"promptdt-small", "dt"}
    best = OfflineDataset.load(folder / "demos" / f"{TRAIN[0].name}.npz").returns().max()
    assert np.allclose(cond.target - cond.offset, best, atol=1e-4)
    at_zero = cond[(cond.offset == 0.0) & (cond.policy == "dt")].return_mean.iloc[0]
    evaluated = table[(table.task == TRAIN[0].name) & (table.policy == "dt")].return_mean.iloc[0]
    assert at_zero == pytest.approx(evaluated, rel=1e-5, abs=1e-5)
    assert set(figures) >= {"conditioning_return_spread_dt", "conditioning_return_spread_promptdt-small"}
    # shipping copies experts and models, drops the data and keeps each task's best demonstration
    shipped = tmp_path / "shipped"
    ship_study(folder, shipped)
    assert not (shipped / "data").exists()
    assert sorted(p.name for p in (shipped / "models").iterdir()) == sorted(p.name for p in (folder / "models").iterdir())
    for task in (*TRAIN, *UNSEEN):
        source = OfflineDataset.load(folder / "demos" / f"{task.name}.npz")
        kept = OfflineDataset.load(shipped / "demos" / f"{task.name}.npz")
        assert kept.episodes == 1 and source.episodes == TINY.demo_episodes
        assert kept.returns()[0] == source.returns().max()
    with pytest.raises(FileNotFoundError, match="models"):
        ship_study(tmp_path / "nowhere", tmp_path / "elsewhere")


def test_example_spec_prepares_with_the_default_budget() -> None:
    import tomllib

    examples = Path(__file__).resolve().parents[2] / "examples"
    with open(examples / "comp.toml", "rb") as f:
        job = comp_spec.prepare(tomllib.load(f), examples)
    assert job.study.budget() == StudyBudget()
    assert Path(job.study.folder).resolve() == (examples.parent / "comp_study").resolve()
    with open(examples / "comp_joint.toml", "rb") as f:
        joint = comp_spec.prepare(tomllib.load(f), examples)
    train, unseen = joint.tasks.resolve()
    assert (tuple(train), tuple(unseen)) == (JOINT_TRAINING_TASKS, JOINT_UNSEEN_TASKS)
    assert joint.study.budget().warm_start == joint.study.budget().demonstrator == "planner"
    if (shipped_study() / "models" / "multitask_ppo.msgpack").exists():
        with open(examples / "comp_evaluate.toml", "rb") as f:
            shipped = comp_spec.prepare(tomllib.load(f), examples)
        assert Path(shipped.study.folder).resolve() == shipped_study()
    # the shipped (Prompt-)DTs were trained with the example's budget
    budget = StudyBudget()
    for path in sorted((shipped_study() / "models").glob("*dt*.msgpack")):
        meta = load_metadata(path)
        size = budget.sizes[0] if path.stem == "dt" else path.stem.removeprefix("promptdt-")
        assert meta["config"] == budget.dt_config(size).to_dict(), path.name
        assert meta["steps"] == budget.dt_steps and meta["use_prompt"] == (path.stem != "dt")


def test_the_shipped_studies_are_found_through_decisions_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One lookup (``decisions.kit.shipped``): ``DECISIONS_DATA`` when set, else the checkout's ``data/``; a
    missing folder names itself and the variable, and a spec's ``shipped:`` folder reads the same place."""
    checkout = shipped_study()
    assert checkout == Path(__file__).resolve().parents[2] / "data" / "comp" / "trained"
    assert not any(Path(comp_spec.__file__).parent.rglob("*.msgpack"))  # no model inside the package
    (tmp_path / "comp" / "trained").mkdir(parents=True)
    monkeypatch.setenv("DECISIONS_DATA", str(tmp_path))
    assert shipped_study() == tmp_path / "comp" / "trained"
    with pytest.raises(InputError, match="would write into the shipped study") as refused:  # read-only input
        comp_spec.prepare(_spec(study={"folder": "shipped:comp/trained", "stages": ["data"]}), tmp_path)
    assert str(tmp_path / "comp" / "trained") in str(refused.value)
    with pytest.raises(FileNotFoundError, match="DECISIONS_DATA") as missing:
        joint_study()
    assert str(tmp_path / "comp" / "trained_joint") in str(missing.value)
    assert_input_error(comp_spec.prepare, _spec(study={"folder": "shipped:comp/nowhere"}), tmp_path,
                       field="study.folder")


class _CountingRunner(SerialRunner):
    """A serial runner that notes what it was asked to run."""

    def __init__(self) -> None:
        self.calls: list[tuple[object, list[dict]]] = []

    def run(self, fn, configs, *, progress=None):  # noqa: ANN001, ANN202 (the Runner protocol's)
        self.calls.append((fn, list(configs)))
        return super().run(fn, configs, progress=progress)


def test_experts_trained_as_parts_of_a_runner_are_written_as_in_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from decisions.telecom.comp.study import stages as study

    # the training is faked (its determinism is train_expert's); what is tested is the plumbing
    monkeypatch.setattr(study, "train_expert", lambda task, steps, seed=0, **_: f"{task.name} {steps} {seed}")
    monkeypatch.setattr(study, "save_expert", lambda path, result, task: Path(path).write_text(f"expert {result}"))
    tasks = [TRAINING_TASKS[0], TRAINING_TASKS[3]]
    budget = replace(TINY, expert_steps=1_600, warm_start="max_snr")
    train_experts(StudyContext(tmp_path / "in_turn", budget, tasks, (), seed=4))
    runner = _CountingRunner()
    with parts_runner(runner):
        one = train_experts(StudyContext(tmp_path / "parts", budget, tasks[:1], (), seed=4))
        assert one.keys() == {tasks[0].name}  # one: in turn
        seconds = train_experts(StudyContext(tmp_path / "parts", budget, (*tasks, TRAINING_TASKS[5]), (), seed=4))
        assert train_experts(StudyContext(tmp_path / "parts", budget, tasks, ())) == {}  # kept: nothing left to train
    missing = [tasks[1], TRAINING_TASKS[5]]
    assert runner.calls == [
        (expert_part, [{"task": t.name, "steps": 1_600, "seed": 4, "warm_start": "max_snr"} for t in missing])
    ]
    assert set(seconds) == {t.name for t in missing}
    for task in tasks:
        name = f"experts/{task.name}.msgpack"
        assert (tmp_path / "parts" / name).read_bytes() == (tmp_path / "in_turn" / name).read_bytes()
    assert (tmp_path / "parts" / f"experts/{TRAINING_TASKS[5].name}.msgpack").read_text() == (
        f"expert {TRAINING_TASKS[5].name} 1600 4"
    )
