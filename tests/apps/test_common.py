"""Shared app helpers: the runs table, the artifacts folder, reopening a run's report, CSV artifacts, progress,
the job table and headline figures of a form, number column formats, a bad ``?run=<id>`` or another domain's
run on the report pages, the password gate in front of a domain page, bad numbers in a page's form."""

from __future__ import annotations

from pathlib import Path

import pytest

from apps import app_common
from decisions.energy.gas_storage import DOMAIN as GAS_STORAGE
from decisions.errors import InputError
from decisions.health.pharma import DOMAIN as PHARMA
from decisions.platform.registry import DOMAINS
from decisions.store import list_runs, recorded_run
from tests.apps.conftest import GAS_PAGE, PENSION_PAGE, PHARMA_PAGE, WEALTH_PAGE
from tests.apps.helpers import one_line_error, open_page, submit


def test_runs_frame_shows_each_runs_own_headline(store_url: str) -> None:
    with recorded_run("gas_storage", "one", {}, url=store_url) as run:
        run.log_metrics({"value_snapo": 5.0, "snapo_vs_lsmc": 1.0234567, "other": 1.0})
    with recorded_run("gas_storage", "two", {}, url=store_url):
        pass
    with recorded_run("utility", "three", {}, url=store_url) as run:
        run.log_metrics({"engagement_gain_vs_production": 0.031, "value_snapo": 9.0})
    frame = app_common.runs_frame(list_runs(url=store_url))
    assert list(frame.columns) == ["id", "kind", "name", "status", "started", "duration_s", "headline"]
    assert list(frame["name"]) == ["three", "two", "one"]
    assert frame["headline"].tolist() == ["engagement_gain_vs_production=0.031", "",
                                          "value_snapo=5, snapo_vs_lsmc=1.023"]
    assert app_common.runs_frame([]).empty
    assert app_common.run_kinds(store_url) == ["gas_storage", "utility"]


def test_artifacts_dir_is_next_to_a_sqlite_file(tmp_path: Path) -> None:
    assert app_common.artifacts_dir(f"sqlite:///{tmp_path / 'runs.db'}") == str(tmp_path / "artifacts")
    from decisions.store.db import default_database_path

    server_default = str(default_database_path().parent / "artifacts")
    assert app_common.artifacts_dir("sqlite:///:memory:") == server_default
    assert app_common.artifacts_dir("postgresql://user@host/db") == server_default


def test_headlines_and_the_overview_come_from_the_registry() -> None:
    for domain in DOMAINS:
        metrics = {name: float(i) for i, name in enumerate(domain.headline)}
        assert app_common.headline_text(domain.name, metrics).split(", ") == [
            f"{name}={i:,.4g}" for i, name in enumerate(domain.headline)]
    assert app_common.headline_text("no-such-kind", {"value_snapo": 1.0}) == ""
    overview = app_common.platform_overview()
    assert "SNAPO" not in overview and "every input" not in overview
    for domain in DOMAINS:
        assert (f"- **{domain.title}**: {domain.summary}" in overview) == (domain.page is not None)


def test_load_report_refuses_a_run_of_another_kind(store_url: str) -> None:
    with recorded_run(PHARMA.name, "a-pharma-run", {}, url=store_url) as run:
        pass
    with pytest.raises(InputError) as err:
        app_common.load_report(GAS_STORAGE, run.run_id, store_url)
    assert err.value.field == "run"
    assert str(err.value) == f"run: run {run.run_id} is a pharma run, not gas_storage"
    with pytest.raises(InputError, match=r"^run: "):
        app_common.report_loader(GAS_STORAGE)(run.run_id, store_url)


def test_load_report_of_a_run_without_its_report_names_run(store_url: str) -> None:
    with recorded_run(GAS_STORAGE.name, "no-files", {}, url=store_url) as run:
        pass
    with pytest.raises(InputError, match=rf"^run: run {run.run_id}: .*no saved report"):
        app_common.load_report(GAS_STORAGE, run.run_id, store_url)


class _FakeBar:
    def __init__(self, value: float, text: str) -> None:
        self.updates = [(value, text)]

    def progress(self, value: float, text: str) -> None:
        self.updates.append((value, text))


class _FakeContainer:
    def __init__(self) -> None:
        self.bars: list[_FakeBar] = []

    def progress(self, value: float, text: str) -> _FakeBar:
        self.bars.append(_FakeBar(value, text))
        return self.bars[-1]


def test_streamlit_progress_draws_one_bar_per_task() -> None:
    container = _FakeContainer()
    progress = app_common.StreamlitProgress(container)
    progress("SNAPO training", 0, 4)
    progress("SNAPO training", 2, 4)
    progress("intrinsic LP", 1, 1)
    progress("SNAPO training", 5, 4)
    progress("empty task", 0, 0)
    assert progress.tasks == ["SNAPO training", "intrinsic LP", "empty task"]
    assert [value for value, _ in container.bars[0].updates] == pytest.approx([0.0, 0.5, 1.0])
    assert container.bars[0].updates[1][1] == "SNAPO training: 2/4"
    assert container.bars[2].updates == [(1.0, "empty task: 0/0")]


@pytest.mark.parametrize("page", [GAS_PAGE, PENSION_PAGE, PHARMA_PAGE, WEALTH_PAGE])
@pytest.mark.parametrize(("requested", "words"), [("999", "does not exist"), ("abc", "invalid literal")])
def test_unknown_run_shows_an_error(store_url: str, page: str, requested: str, words: str) -> None:
    at = open_page(page, run=requested)
    assert at.error[0].value.startswith(f"run: cannot open run '{requested}'")
    assert words in at.error[0].value


PAGE = {domain.name: domain.page for domain in DOMAINS}

# page, its domain's run kind, the kind of the run asked for
OTHER_DOMAINS_RUNS = [
    (PENSION_PAGE, "pension", "pharma"),
    (PHARMA_PAGE, "pharma", "gas_storage"),
    (WEALTH_PAGE, "wealth", "pension"),
    (PAGE["splitfl"], "splitfl", "utility"),
    (PAGE["traffic"], "traffic", "utility"),
]


@pytest.mark.parametrize(("page", "kind", "other"), OTHER_DOMAINS_RUNS)
def test_a_run_of_another_domain_is_refused(store_url: str, page: str, kind: str, other: str) -> None:
    with recorded_run(other, "another-domains-run", {}, url=store_url) as run:
        pass
    at = open_page(page, run=run.run_id)
    assert [e.value for e in at.error] == [
        f"run: cannot open run '{run.run_id}': run: run {run.run_id} is a {other} run, not {kind}"]
    assert not [h.value for h in at.header if h.value.startswith("Results of run")]


# page, its title, the key of its run button
GATED_PAGES = [
    (GAS_PAGE, "Gas storage", "run"),
    (PAGE["building"], "Building energy", "b_run"),
    (PAGE["utility"], "Utility weights", "run"),
    (PAGE["splitfl"], "Split learning", "run"),
]


@pytest.mark.parametrize(("page", "title", "button"), GATED_PAGES)
def test_a_domain_page_is_behind_the_password_gate(
    store_url: str, monkeypatch: pytest.MonkeyPatch, page: str, title: str, button: str
) -> None:
    monkeypatch.setenv("DECISIONS_APP_PASSWORD", "pw")
    at = open_page(page, timeout=90)
    assert not at.title and not at.number_input and not at.button
    assert not at.text_input(key="app_password").value
    at.text_input(key="app_password").input("pw").run()
    assert at.title[0].value == title and at.button(key=button)


# page, then the numbers submitted in turn, each with the field its error line starts with
BAD_NUMBERS = [
    (PENSION_PAGE, [({"contribution_min": 0.5}, "scenario.funding.contribution_max:"),
                    ({"contribution_min": 0.0, "steps": 0}, "snapo.steps:")]),
    (PAGE["utility"], [({"steps": 0}, "agent.steps:")]),
    (PAGE["splitfl"], [({"rounds": 0}, "training.rounds:"), ({"rounds": 5, "seeds": 0}, "training.seeds:")]),
]


@pytest.mark.parametrize(("page", "cases"), BAD_NUMBERS)
def test_bad_numbers_show_one_line_naming_the_field_and_record_nothing(
    store_url: str, page: str, cases: list[tuple[dict[str, float], str]]
) -> None:
    at = open_page(page)
    for numbers, field in cases:
        one_line_error(submit(at, numbers), field)
    assert list_runs(url=store_url) == [] and not at.status


def test_job_table_of_a_form() -> None:
    form = {"name": 7, "seed": "3", "other": 1.0}
    assert app_common.job_table(PHARMA, form, "/tmp/out", method="all") == {
        "kind": "pharma", "name": "7", "seed": 3, "method": "all", "output_dir": "/tmp/out"
    }
    assert app_common.job_table(GAS_STORAGE, form, None) == {"kind": "gas_storage", "name": "7", "seed": 3}


def test_format_figures_keeps_the_metrics_a_run_has() -> None:
    headline = [("a", "A", "{:,.0f}"), ("b", "B", "{:.3f}"), ("c", "C", "{:.1%}")]
    assert app_common.format_figures({"c": 0.25, "a": 12345.6}, headline) == [("A", "12,346", None), ("C", "25.0%", None)]
    assert app_common.format_figures({}, headline) == []


def test_number_columns_head_each_column_by_its_label_or_its_name() -> None:
    columns = app_common.number_columns({"mean_yield": "%.2f", "compliance": "%.3f"},
                                        labels={"mean_yield": "mean yield (%)"})
    assert list(columns) == ["mean_yield", "compliance"]
    assert [(c["label"], c["type_config"]["format"]) for c in columns.values()] == [
        ("mean yield (%)", "%.2f"), ("compliance", "%.3f")]
