"""The operator's commands: ``decisions assets`` (add, list, show, retire), ``deploy``, ``rollback``,
``decide``, ``outcome`` and ``monitor``. Every write names who did it (the OS user); bad input is one
``error:`` line and exit code 2, with nothing written.
"""

from __future__ import annotations

import csv
import io
import json
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from decisions import cli_checks
from decisions.cli_console import CliConsole
from decisions.cli_errors import clean_errors
from decisions.errors import InputError

if TYPE_CHECKING:
    from decisions.platform.operations import Answer
    from decisions.store import DeploymentRecord

console = CliConsole()
assets_app = typer.Typer(no_args_is_help=True, help="The assets an operator decides for.")

AssetArgument = Annotated[str, typer.Argument(help="The asset.")]
"""The asset a command acts on, by name (its first argument)."""


def _settings_file(path: Path | None) -> dict[str, Any]:
    """An asset's settings from a JSON or TOML file (empty without one)."""
    if path is None:
        return {}
    if not path.is_file():
        raise InputError("settings", f"no such file: {path}")
    try:
        if path.suffix.lower() == ".toml":
            return tomllib.loads(path.read_text(encoding="utf-8"))
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, tomllib.TOMLDecodeError) as err:
        raise InputError("settings", f"{path.name} is not JSON or TOML ({err})") from None
    if not isinstance(loaded, dict):
        raise InputError("settings", f"{path.name} must hold a table")
    return loaded


@assets_app.command("add")
@clean_errors
def assets_add(
    name: Annotated[str, typer.Argument(help="The asset's name, e.g. 'Storage lease North'.")],
    kind: Annotated[str, typer.Option(help="Its domain (a job kind).")],
    settings: Annotated[Path | None, typer.Option(help="JSON or TOML: its settings; a [state] table fills "
                                                       "fields today's states leave out.")] = None,
    note: Annotated[str | None, typer.Option(help="A note.")] = None,
) -> None:
    """Add an asset of one domain."""
    domain_name = cli_checks.job_kind(kind)
    cli_checks.allowed("add assets")
    from decisions.platform.operations import decider_of
    from decisions.platform.registry import get
    from decisions.store import create_asset

    decider_of(get(domain_name or kind), field="kind")
    record = create_asset(name, domain_name or kind, _settings_file(settings), note=note)
    console.print(f"asset {record.name!r} ({record.kind}) added", highlight=False)


@assets_app.command("list")
@clean_errors
def assets_list(
    kind: Annotated[str | None, typer.Option(help="Only this domain.")] = None,
    all_assets: Annotated[bool, typer.Option("--all", help="Retired ones too.")] = False,
) -> None:
    """List the assets, what is deployed for each and since when."""
    from decisions.store import current, list_assets

    table = Table("asset", "domain", "deployed", "run", "since (UTC)", "by", "retired")
    for asset in list_assets(cli_checks.job_kind(kind), include_retired=all_assets):
        now = current(asset.name)
        table.add_row(asset.name, asset.kind, now.label if now else "nothing", str(now.run_id) if now else "",
                      f"{now.chosen_at:%Y-%m-%d %H:%M}" if now else "", (now.chosen_by or "") if now else "",
                      f"{asset.retired_at:%Y-%m-%d}" if asset.retired_at else "")
    console.print(table)


def _history_table(records: list[DeploymentRecord], title: str) -> Table:
    table = Table("#", "policy", "run", "digest", "note", "by", "at (UTC)", title=title)
    for r in records:
        table.add_row(str(r.id), r.label, str(r.run_id), (r.policy_digest or "")[:12], r.note or "",
                      r.chosen_by or "", f"{r.chosen_at:%Y-%m-%d %H:%M:%S}")
    return table


@assets_app.command("show")
@clean_errors
def assets_show(
    name: AssetArgument,
    limit: Annotated[int, typer.Option(help="Latest N decisions.")] = 10,
) -> None:
    """Show an asset: its deployments (newest first) and latest decisions with their outcomes."""
    cli_checks.count(limit, "limit")
    from decisions.store import asset_history, decisions_of, get_asset, outcomes_for

    asset = get_asset(name)
    console.print(f"[bold]{asset.name}[/bold] ({asset.kind}) settings {json.dumps(asset.settings)}", highlight=False)
    console.print(_history_table(asset_history(name), "deployments"))
    table = Table("#", "action", "expected", "realised", "by", "at (UTC)", title="decisions")
    for d in decisions_of(name, limit):
        outcomes = outcomes_for(d.id)
        realised = outcomes[-1].realised_value if outcomes else None
        table.add_row(str(d.id), json.dumps(d.action), _number(d.expected_value), _number(realised),
                      d.decided_by or "", f"{d.decided_at:%Y-%m-%d %H:%M:%S}")
    console.print(table)


@assets_app.command("retire")
@clean_errors
def assets_retire(name: AssetArgument) -> None:
    """Retire an asset: its history stays, nothing more is decided for it."""
    cli_checks.allowed("retire assets")
    from decisions.store import retire_asset

    retire_asset(name)
    console.print(f"asset {name!r} retired", highlight=False)


@clean_errors
def deploy_command(
    asset: AssetArgument,
    run_id: Annotated[int, typer.Argument(help="A succeeded run of the asset's domain.")],
    policy: Annotated[str | None, typer.Option(help="One of the run's policies (default: the one its study favours).")] = None,
    note: Annotated[str | None, typer.Option(help="Why.")] = None,
    propose: Annotated[bool, typer.Option("--propose", help="Only list the run's policies, best first.")] = False,
) -> None:
    """Deploy a recorded run's policy for an asset (the history is kept; rollback undoes it)."""
    cli_checks.run_id(run_id)
    if not propose:
        cli_checks.allowed("deploy")
    from decisions.platform.operations import deploy
    from decisions.platform.operations import propose as offered

    if propose:
        proposal = offered(asset, run_id)
        table = Table("policy", "label", proposal.best.score_name, "learnt", title=proposal.words())
        for c in proposal.candidates:
            table.add_row(c.name, c.label, f"{c.score:.6g}", "yes" if c.learnt else "no")
        console.print(table)
        return
    record, proposal = deploy(asset, run_id, policy, note=note)
    console.print(proposal.words(), highlight=False)
    console.print(f"deployed for {asset!r}: {record.label} (run {record.run_id}, deployment {record.id}, "
                  f"digest {(record.policy_digest or '')[:12]})", highlight=False)


@clean_errors
def rollback_command(
    asset: AssetArgument,
    to: Annotated[int | None, typer.Option(help="The deployment to go back to (default: the previous one).")] = None,
) -> None:
    """Deploy again the asset's previous deployment (or deployment --to), as a new record."""
    cli_checks.allowed("roll back")
    from decisions.store import rollback

    record = rollback(asset, to)
    console.print(f"{asset!r} runs {record.label} again (run {record.run_id}, deployment {record.id})", highlight=False)


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def answer_rows(answers: list[Answer]) -> list[dict[str, Any]]:
    """One flat row per answer: the decision's id, the state's fields, the action's, the expected outcome
    and its interval, the value, the alternative's action and value (the CSV and JSON output)."""
    rows = []
    for a in answers:
        d = a.decision
        low, high = d.interval if d.interval is not None else (None, None)
        rows.append({"decision": a.decision_id, **a.state,
                     **{f"action_{k}" if k != "action" else "action": v for k, v in d.action.items()},
                     "expected": d.expected, "expected_low": low, "expected_high": high, "value": d.value,
                     "alternative_policy": d.alternative.get("policy"),
                     "alternative_action": json.dumps(d.alternative.get("action")),
                     "alternative_value": d.alternative.get("value"),
                     "reasons": json.dumps(dict(d.reasons)),
                     "sensitivities": json.dumps(dict(d.sensitivities))})
    return rows


def _csv_text(rows: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(dict.fromkeys(k for row in rows for k in row)))
    writer.writeheader()
    writer.writerows({k: json.dumps(v) if isinstance(v, list | dict) else v for k, v in row.items()} for row in rows)
    return out.getvalue()


@clean_errors
def decide_command(
    asset: AssetArgument,
    state: Annotated[Path, typer.Option(help="One state (JSON object), several (JSON list) or a CSV, one per row.")],
    out: Annotated[Path | None, typer.Option(help="Write the answers here (.csv or .json).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the answers as JSON.")] = False,
    record: Annotated[bool, typer.Option(help="Record the decisions (--no-record: a what-if).")] = True,
) -> None:
    """Today's decision for each state from the asset's deployed policy, with its expected outcome, the
    alternative and why; each recorded."""
    from decisions.platform.operations import decide
    from decisions.platform.state_files import read_records

    if out is not None and out.suffix.lower() not in (".csv", ".json"):
        raise InputError("out", "give a .csv or .json file")
    if record:
        cli_checks.allowed("decide")
    records = read_records(state, field="state")
    answers = decide(asset, [r.fields for r in records], names=[r.name for r in records], record=record)
    rows = answer_rows(answers)
    if out is not None:
        out.write_text(json.dumps(rows, indent=1) if out.suffix.lower() == ".json" else _csv_text(rows))
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
        return
    table = Table("decision", "action", "expected", "95% interval", "value", "alternative", "why")
    for row, a in zip(rows, answers, strict=True):
        d = a.decision
        interval = f"{d.interval[0]:.4g} .. {d.interval[1]:.4g}" if d.interval else ""
        table.add_row(str(row["decision"] or "-"), json.dumps(dict(d.action)), f"{d.expected:.4g}", interval,
                      f"{d.value:.4g}", f"{d.alternative.get('policy', '')}: {json.dumps(d.alternative.get('action'))}",
                      json.dumps(dict(d.reasons))[:120])
    console.print(table)
    if out is not None:
        console.print(f"{len(rows)} answers written to {out}", highlight=False)


def _outcome_rows(path: Path) -> list[Any]:
    """The outcomes of a CSV or JSON file: ``decision`` and ``value`` in every record, an optional
    ``note``, every other field kept as the realised fields."""
    from decisions.platform.state_files import read_records
    from decisions.store import NewOutcome

    found = []
    for record in read_records(path, field="file"):
        fields = dict(record.fields)
        decision, value = fields.pop("decision", None), fields.pop("value", None)
        if not isinstance(decision, int) or isinstance(decision, bool) or decision < 1:
            raise InputError(f"{record.name}: decision", f"must be a decision id, got {decision!r}")
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise InputError(f"{record.name}: value", f"must be a number, got {value!r}")
        note = fields.pop("note", None)
        found.append(NewOutcome(decision, fields, float(value), str(note) if note is not None else None, record.name))
    return found


@clean_errors
def outcome_command(
    decision: Annotated[int | None, typer.Argument(help="The decision the outcome follows.")] = None,
    value: Annotated[float | None, typer.Argument(help="The realised number the decision's expected one is compared with.")] = None,
    realised: Annotated[str | None, typer.Option(help="The realised fields as a JSON object.")] = None,
    note: Annotated[str | None, typer.Option(help="A note.")] = None,
    file: Annotated[Path | None, typer.Option(help="Many outcomes: a CSV or JSON with decision, value, [note] "
                                                   "and any realised fields; checked whole before any is recorded.")] = None,
) -> None:
    """Record what happened after a decision (or after each decision of a file)."""
    cli_checks.allowed("record outcomes")
    from decisions.store import NewOutcome, record_outcomes

    if file is not None:
        if decision is not None or value is not None:
            raise InputError("file", "give either a file or one decision and its value, not both")
        written = record_outcomes(_outcome_rows(file))
        console.print(f"{len(written)} outcomes recorded", highlight=False)
        return
    if decision is None or value is None:
        raise InputError("decision", "give the decision and the realised value (or --file)")
    cli_checks.run_id(decision, "decision")
    fields: Any = {}
    if realised is not None:
        try:
            fields = json.loads(realised)
        except ValueError as err:
            raise InputError("realised", f"is not JSON ({err})") from None
    if not isinstance(fields, dict):
        raise InputError("realised", "must be a JSON object")
    written = record_outcomes([NewOutcome(decision, fields, value, note)])
    console.print(f"outcome {written[0].id} of decision {decision} recorded", highlight=False)


@clean_errors
def monitor_command(
    asset: Annotated[str | None, typer.Argument(help="The asset (default: every asset in operation).")] = None,
    arl0: Annotated[float, typer.Option(help="Decisions between false alarms on average.")] = 500,
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdicts as JSON.")] = False,
) -> None:
    """Compare realised outcomes with what each asset's deployed policy expected; raise an alarm when they
    part (exit code 3 when any asset is in alarm)."""
    from decisions.platform.monitoring import monitor_asset
    from decisions.store import list_assets

    names = [asset] if asset is not None else [a.name for a in list_assets()]
    found = [monitor_asset(name, arl0=arl0) for name in names]
    if as_json:
        typer.echo(json.dumps([{"asset": m.asset, "outcomes": m.outcomes, "alarm": m.open_alarm is not None,
                                "alarm_decision": m.open_alarm[0] if m.open_alarm else None,
                                "alarm_channel": m.open_alarm[1].channel if m.open_alarm else None,
                                "alarm_side": m.open_alarm[1].side if m.open_alarm else None,
                                "verdict": m.words(), "design": list(m.design)} for m in found], indent=1))
    else:
        for m in found:
            console.print(("[red]" if m.open_alarm else "[green]") + m.words() + "[/]", highlight=False)
        if found:
            console.print(f"design: {'; '.join(found[0].design)}", highlight=False)
    if any(m.open_alarm for m in found):
        raise typer.Exit(3)
