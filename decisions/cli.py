"""The decisions command line: batch jobs recorded in the run store.

Bad input exits with code 2 and one line naming the field; a run that fails
after it started is recorded as failed and exits with code 1.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from decisions import cli_checks
from decisions.cli_console import CliConsole
from decisions.cli_db import db_app
from decisions.cli_errors import RunFailed, clean_errors, err_console
from decisions.cli_forget import forget_command
from decisions.cli_help import DomainTablesCommand
from decisions.cli_operate import (
    assets_app,
    decide_command,
    deploy_command,
    monitor_command,
    outcome_command,
    rollback_command,
)
from decisions.cli_users import users_app
from decisions.errors import InputError

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
runs_app = typer.Typer(no_args_is_help=True, help="Read the run store.")
app.add_typer(runs_app, name="runs")
app.add_typer(db_app, name="db")
app.command("forget")(forget_command)
app.add_typer(assets_app, name="assets")
app.add_typer(users_app, name="users")
app.command("deploy")(deploy_command)
app.command("rollback")(rollback_command)
app.command("decide")(decide_command)
app.command("outcome")(outcome_command)
app.command("monitor")(monitor_command)

console = CliConsole()


@app.command()
@clean_errors
def demo(
    paths: Annotated[int, typer.Option(help="Evaluation paths.")] = 256,
    out: Annotated[Path | None, typer.Option(help="Folder for tables and the chart.")] = None,
) -> None:
    """The main job: SNAPO on the default 365-day stochastic gas storage scenario against every baseline."""
    cli_checks.count(paths, "paths")
    from decisions.platform.registry import MAIN

    demo_spec = MAIN.demo_spec or {}
    spec = {section: dict(table) for section, table in demo_spec.items()}
    spec["job"] = {**spec.get("job", {}), "kind": MAIN.name}
    spec["evaluation"] = {**spec.get("evaluation", {}), "paths": paths}
    if out is not None:
        spec["job"]["output_dir"] = str(out)
    _run_specs([spec], base_dir=None, workers=1)


@app.command(cls=DomainTablesCommand)
@clean_errors
def run(
    spec_file: Annotated[Path, typer.Argument(help="Job spec (TOML): \\[job] with its kind, that domain's tables (listed below) and an optional \\[sweep].")],
    workers: Annotated[int, typer.Option(help="Processes for a sweep (backend process).")] = 2,
    backend: Annotated[
        str,
        typer.Option(help="Where a sweep runs: process (worker processes here), serial (in this process) or ray (Ray tasks; pip install -e \".\\[ray]\")."),
    ] = "process",
    address: Annotated[
        str | None,
        typer.Option(help="With --backend ray: the cluster to join (auto, host:port or ray://host:port); default: a local Ray on this machine's cores, on 127.0.0.1."),
    ] = None,
) -> None:
    """Run a job spec (or a sweep of them); each job is a recorded run."""
    from decisions.kit.spec import expand_sweep, load_toml
    from decisions.platform.execute import choose_runner

    cli_checks.count(workers, "workers", maximum=cli_checks.MAX_WORKERS)
    runner = choose_runner(backend, workers=workers, address=address)  # bad options fail before the spec is read
    spec = load_toml(spec_file)
    _run_specs(expand_sweep(spec), base_dir=spec_file.parent, workers=workers, runner=runner)


def _interrupt_on_sigterm() -> None:
    """Make SIGTERM interrupt the job like Ctrl-C, so its run is recorded as interrupted."""
    from decisions.platform.interrupt import raise_on_sigterm

    raise_on_sigterm()  # raises Terminated (a KeyboardInterrupt): the run is recorded as interrupted


def _run_specs(specs: list[dict[str, Any]], *, base_dir: Path | None, workers: int, runner: Any = None) -> None:
    _interrupt_on_sigterm()
    from decisions.platform.execute import execute_specs, prepare_specs

    prepared = prepare_specs(specs, base_dir)  # validates every job before any run starts
    cli_checks.allowed("run")
    outcomes = _interruptible(
        lambda progress: execute_specs(prepared, workers=workers, progress=progress, runner=runner)
    )
    _report_outcomes(outcomes)


def _interruptible(execute: Callable[[Any], list[Any]]) -> list[Any]:
    """Run ``execute(progress)`` with a progress display; a stop (Ctrl-C, SIGTERM) prints its summary and exits."""
    from decisions.core.progress import console_progress
    from decisions.platform.interrupt import JobsInterrupted, exit_now

    try:
        with console_progress() as progress:
            return execute(progress)
    except JobsInterrupted as stop:  # its runs are recorded as interrupted; say what was stopped
        err_console.print(stop.summary(), highlight=False, soft_wrap=True)
        if getattr(sys.modules.get("__main__"), "app", None) is app:
            exit_now(stop.exit_code)
        raise typer.Exit(stop.exit_code) from None


def _report_outcomes(outcomes: list[Any]) -> None:
    """Print each recorded run; raise ``RunFailed`` naming the errors of the failed ones."""
    failed = [o for o in outcomes if o.error is not None]
    for outcome in outcomes:
        if outcome.run_id is not None:
            _print_run(outcome.run_id, summary_only=len(outcomes) > 1)
    if failed:
        raise RunFailed("; ".join(o.error or "" for o in failed))


@runs_app.command("list")
@clean_errors
def runs_list(
    limit: Annotated[int, typer.Option(help="Most recent N runs.")] = 20,
    kind: Annotated[str | None, typer.Option(help="Only this job kind.")] = None,
    status: Annotated[str | None, typer.Option(help="running, succeeded, failed, interrupted or lost.")] = None,
) -> None:
    """List recent runs, newest first."""
    cli_checks.count(limit, "limit")
    kind = cli_checks.job_kind(kind)
    from decisions.store import RunStatus, list_runs

    if status is not None and status not in {s.value for s in RunStatus}:
        raise InputError("status", f"unknown status {status!r}")
    records = list_runs(limit=limit, kind=kind, status=RunStatus(status) if status else None)
    table = Table("id", "kind", "name", "status", "started", "seconds", "headline")
    for rec in records:
        metrics = rec.latest_metrics()
        headline = next((f"{k}={metrics[k]:,.4g}" for k in _headline(rec.kind) if metrics.get(k) is not None), "")
        table.add_row(
            str(rec.id), rec.kind, rec.name, str(rec.status.value if hasattr(rec.status, "value") else rec.status),
            rec.started_at.strftime("%Y-%m-%d %H:%M:%S") if rec.started_at else "",
            f"{rec.duration_seconds:.1f}" if rec.duration_seconds is not None else "", headline,
        )
    console.print(table)


@runs_app.command("show")
@clean_errors
def runs_show(run_id: Annotated[int, typer.Argument(help="Run id.")]) -> None:
    """Show one run: status, config, metrics and artifacts."""
    _print_run(cli_checks.run_id(run_id), summary_only=False, show_config=True)


def _headline(kind: str) -> tuple[str, ...]:
    """The headline metric names of a run kind (its domain's), or none for an unknown kind."""
    from decisions.platform.registry import find

    domain = find(kind)
    return domain.headline if domain is not None else ()


def _print_run(run_id: int, *, summary_only: bool, show_config: bool = False) -> None:
    from decisions.store import get_run
    from decisions.store.artifacts import local_copies, location

    rec = get_run(run_id)
    status = rec.status.value if hasattr(rec.status, "value") else str(rec.status)
    console.print(f"[bold]run {rec.id}[/bold] {rec.kind}/{rec.name}: {status}"
                  + (f" in {rec.duration_seconds:.1f} s" if rec.duration_seconds is not None else ""))
    if rec.error:
        console.print(f"  error: {rec.error}", highlight=False)
    if rec.started_by and not summary_only:
        console.print(f"  started by {rec.started_by}", highlight=False)
    if not summary_only:
        _print_liveness(rec)
        _print_resumes(rec)
    if show_config:
        console.print_json(json.dumps(_compact(rec.config)))
    comparison = local_copies(rec).get("comparison")
    if comparison is not None and comparison.exists():
        _print_comparison(comparison)
    metrics = rec.latest_metrics()
    if metrics:
        table = Table("metric", "value")
        headline = _headline(rec.kind)
        for name, value in sorted(metrics.items()):
            if summary_only and name not in headline:
                continue
            table.add_row(name, "" if value is None else f"{value:,.6g}")
        console.print(table)
    if not summary_only:
        for art in rec.artifacts:
            console.print(f"  artifact {art.name}: {location(art)}", highlight=False)


def _print_liveness(rec: Any) -> None:
    """Where a running or lost run's process is and when it last beat; how to mark a lost run."""
    from decisions.store import RunStatus

    if rec.status not in (RunStatus.RUNNING, RunStatus.LOST):
        return
    beat = rec.heartbeat_at.strftime("%Y-%m-%d %H:%M:%S UTC") if rec.heartbeat_at else "never"
    console.print(f"  process {rec.pid if rec.pid is not None else '?'} on {rec.host}, last heartbeat {beat}",
                  highlight=False)
    if rec.status is RunStatus.LOST:
        console.print("  `decisions runs reap` marks it lost in the store; `decisions runs delete` removes it",
                      highlight=False)
        console.print(f"  `decisions runs resume {rec.id}` continues it from its checkpoints, if its job keeps them",
                      highlight=False)


def _print_resumes(rec: Any) -> None:
    """How often a run was resumed, from which step, and how much its last stop cost (its resumed_* metrics)."""
    metrics = rec.latest_metrics()
    times = metrics.get("resumed_times")
    if not times:
        return
    console.print(
        f"  resumed {int(times)} time{'' if times == 1 else 's'}: last from step {metrics.get('resumed_from_step') or 0:,.0f}, "
        f"at most {metrics.get('resume_lost_steps_max') or 0:,.0f} steps redone "
        f"({metrics.get('resume_lost_seconds') or 0:.1f} s of work lost)",
        highlight=False,
    )


@runs_app.command("reap")
@clean_errors
def runs_reap() -> None:
    """Mark runs left "running" by a process that died (kill -9, out of memory, reboot) as lost."""
    from decisions.store import reap_lost_runs

    marked = reap_lost_runs()
    for rec in marked:
        console.print(f"marked run {rec.id} ({rec.kind}/{rec.name}) {rec.error}", highlight=False)
    if not marked:
        console.print("no lost runs: every run recorded as running is alive", highlight=False)


@runs_app.command("resume")
@clean_errors
def runs_resume(run_id: Annotated[int, typer.Argument(help="Run id (lost, interrupted or failed).")]) -> None:
    """Continue a stopped run (killed, interrupted or failed) from its last checkpoints, into the same run record.

    Building, wealth and CoMP jobs checkpoint their trainers, so at most one checkpoint interval is redone.
    """
    cli_checks.run_id(run_id)
    cli_checks.allowed("run")
    _interrupt_on_sigterm()
    from decisions.platform.execute import execute_resume, prepare_resume

    prepared = prepare_resume(run_id)  # refuses a missing, succeeded, alive or non-resumable run
    err_console.print(f"resuming run {run_id} ({prepared.kind}/{prepared.job.name}): {prepared.point.summary()}",
                      highlight=False, soft_wrap=True)
    _report_outcomes(_interruptible(lambda progress: [execute_resume(prepared, progress=progress)]))


@runs_app.command("delete")
@clean_errors
def runs_delete(
    run_id: Annotated[int, typer.Argument(help="Run id.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
    with_deployments: Annotated[
        bool, typer.Option("--with-deployments", help="Also delete the run's deployment records (what is deployed may change).")
    ] = False,
    with_forgettings: Annotated[
        bool, typer.Option("--with-forgettings", help="Also delete the run's forgetting records (the record that patients were forgotten).")
    ] = False,
) -> None:
    """Delete a run that is not alive: its metrics, artifact records and artifact folder in the store.

    A run with deployment records is refused unless --with-deployments is given, one with forgetting
    records unless --with-forgettings is.
    """
    from decisions.store import RunAliveError, RunStatus, delete_run, deployments, get_run
    from decisions.store.lifecycle import deployment_records, forgetting_records

    rec = get_run(cli_checks.run_id(run_id))
    cli_checks.allowed("delete runs")
    if rec.status is RunStatus.RUNNING:
        raise RunAliveError("run", f"run {run_id} is still running (process {rec.pid} on {rec.host}); stop it first")
    held = deployment_records(run_id, with_deployments=with_deployments)  # refuses a deployed run without the flag
    forgot = forgetting_records(run_id, with_forgettings=with_forgettings)  # and one that forgot patients
    what = _deletion(rec, len(held), len(forgot))
    if not yes:
        typer.confirm(f"Delete {what}?", abort=True, err=True)
    deleted = delete_run(run_id, with_deployments=with_deployments,  # checks again that the run is not alive
                         with_forgettings=with_forgettings)
    console.print(f"deleted {what}", highlight=False)
    for kind in sorted({record.kind for record in deleted.deployments}):
        console.print(f"deployed now: {deployments.describe(deployments.deployed(kind), kind)}", highlight=False)


def _deletion(rec: Any, deployment_records: int, forgetting_records: int = 0) -> str:
    """What deleting run ``rec`` removes, in words: its rows (deployment and forgetting records included) and folders."""
    from decisions.store import artifacts, artifacts_root
    from decisions.store.lifecycle import run_folders

    folders = [str(folder) for folder in run_folders(rec.id, (a.path for a in rec.artifacts), artifacts_root())]
    remote = artifacts.configured_url()
    if remote is not None and not artifacts.is_local(remote):
        folders.append(artifacts.masked(artifacts.run_url(rec.id)))
    counts = [(len(rec.metrics), "metric value"), (len(rec.artifacts), "artifact record")]
    if deployment_records:
        counts.append((deployment_records, "deployment record"))
    if forgetting_records:
        counts.append((forgetting_records, "forgetting record"))
    return f"run {rec.id} ({rec.kind}/{rec.name}, {rec.status.value}): " + ", ".join(
        [f"{n} {noun}{'' if n == 1 else 's'}" for n, noun in counts] + [f"folder {folder}" for folder in folders]
    )


def _compact(value: Any, limit: int = 8) -> Any:
    """Config for display: long numeric lists (a forward curve) become a one-line summary."""
    if isinstance(value, dict):
        return {k: _compact(v, limit) for k, v in value.items()}
    if isinstance(value, list) and len(value) > limit and all(isinstance(v, int | float) for v in value):
        return f"[{len(value)} values, min {min(value):.4g}, mean {sum(value) / len(value):.4g}, max {max(value):.4g}]"
    return value


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.6g}"
    return str(value)


def _print_comparison(path: Path) -> None:
    """Render a run's comparison table (a CSV: one row per method or policy) as a table."""
    import pandas as pd

    frame = pd.read_csv(path)
    table = Table(*map(str, frame.columns), title="comparison on common evaluation draws")
    for row in frame.itertuples(index=False):
        table.add_row(*(_cell(v) for v in row))
    console.print(table)


@app.command()
@clean_errors
def bench(
    name: Annotated[
        str | None,
        typer.Argument(help="Benchmark to run (a domain, or 'agents'); 'report' rewrites the README's and docs' tables."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    settings: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a benchmark setting: key=JSON value (e.g. ppo=false). Repeatable."),
    ] = None,
    save: Annotated[
        bool, typer.Option("--save", help="Also write benchmarks/<name>.json (figures, commit, date, machine, wall time).")
    ] = False,
    merge: Annotated[
        bool,
        typer.Option("--merge", help="With --save: add the figures to the stored result (a bench run in parts)."),
    ] = False,
    run_all: Annotated[bool, typer.Option("--all", help="Run every benchmark in turn (with --save: store each).")] = False,
    check: Annotated[
        bool, typer.Option("--check", help="With 'report': only check the README and docs against the stored results.")
    ] = False,
    smoke: Annotated[bool, typer.Option("--smoke", help="At its smoke budget (--set over it); not stored.")] = False,
) -> None:
    """Run a benchmark and print its figures; "bench report" regenerates the README's and docs' figure tables."""
    from decisions.platform import benches

    if name == "report":
        _bench_report(check)
        return
    if run_all == (name is not None):
        raise InputError("name", f"name one benchmark or give --all (known: {', '.join(benches.names())})")
    if run_all and settings:
        raise InputError("set", "settings apply to one named benchmark, not to --all")
    if merge and not save:
        raise InputError("merge", "--merge adds to the stored result: give --save with it")
    if smoke and save:
        raise InputError("smoke", "a smoke run checks the code, its figures are not stored: leave out --save")
    for each in benches.names() if run_all else [benches.canonical(name or "")]:
        _run_one_bench(each, settings or [], as_json=as_json, save=save, merge=merge, smoke=smoke)


def _run_one_bench(
    name: str, settings: list[str], *, as_json: bool, save: bool, merge: bool = False, smoke: bool = False,
) -> None:
    """Run bench ``name`` with its overrides (over its smoke budget with ``smoke``); print its figures (a
    table, or one JSON line) and store them."""
    from decisions.platform import benches
    from decisions.platform.bench_store import git_commit, parse_overrides, save_result

    bench_module = benches.module(name)
    budget = {**(bench_module.SMOKE_BUDGET if smoke else {}), **parse_overrides(settings, bench_module.run_bench)}
    commit = git_commit() if save else None  # the code that runs, whatever is committed meanwhile
    started = time.perf_counter()
    if not as_json:
        err_console.print(f"bench {name}", highlight=False)
    figures = benches.run(name, None if as_json else _console_progress, **budget)
    if save:
        path = save_result(name, figures, wall_seconds=time.perf_counter() - started, budget=budget, merge=merge, commit=commit)
        err_console.print(f"saved {path}", highlight=False)
    if as_json:
        sys.stdout.write(json.dumps(figures, sort_keys=True) + "\n")
        return
    table = Table("figure", "value", title=name)
    for key, value in sorted(figures.items()):
        table.add_row(key, f"{value:,.6g}" if isinstance(value, float) else str(value))
    console.print(table)


def _bench_report(check: bool) -> None:
    """Regenerate (or, with ``check``, verify) the README's and docs' tables from ``benchmarks/*.json``."""
    from decisions.platform.bench_report import report_files, stale_files, update_files
    from decisions.platform.benches import generated_tables

    tables, files = generated_tables(), report_files()
    if check:
        stale = stale_files(tables, files)
        if stale:
            raise InputError("README.md", f"tables {stale} disagree with benchmarks/*.json (run `decisions bench report`)")
        console.print(f"README and docs tables agree with benchmarks/*.json ({', '.join(sorted(tables))})")
        return
    changed = update_files(tables, files)
    console.print(f"README and docs tables rewritten: {', '.join(changed) or 'none changed'}")


def _console_progress(task: str, done: int, total: int) -> None:
    if done == total:
        err_console.print(f"  {task}: done", highlight=False)


@app.command("new-domain")
@clean_errors
def new_domain(
    target: Annotated[str, typer.Argument(help="AREA/NAME of the new domain, e.g. energy/heat_pump.")],
    root: Annotated[Path, typer.Option(help="The source checkout to write into.")] = Path(__file__).resolve().parent.parent,
) -> None:
    """Write a working domain skeleton (package, example, app page, test) and register it."""
    from decisions.platform.scaffold import create_domain

    for path in create_domain(target, root):
        console.print(f"  {path.relative_to(root)}", highlight=False)
    console.print("Next: replace its problem, keeping the shape (docs/contributing.md).")


@app.command("app")
@clean_errors
def app_command(
    port: Annotated[int, typer.Option(help="Port to serve on.")] = 8501,
    address: Annotated[str, typer.Option(help="Address to listen on (0.0.0.0: every interface).")] = "127.0.0.1",
) -> None:
    """Start the Streamlit operator app; SIGTERM or Ctrl-C stops its server."""
    from decisions.cli_app import serve, streamlit_command

    raise typer.Exit(serve(streamlit_command(port, address)))


if __name__ == "__main__":  # pragma: no cover
    app()
