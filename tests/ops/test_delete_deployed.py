"""``runs delete`` on a run with deployment records: refused in one line naming the flag; with
``--with-deployments`` it says what it removes and what is deployed afterwards."""

from __future__ import annotations

from typer.testing import CliRunner

from decisions.cli import app
from decisions.store import RunStatus, deployments, finish_run, get_run, list_runs, start_run

runner = CliRunner()


def _deployed_runs(url: str) -> tuple[int, int]:
    """Two finished utility runs; the older chosen first, the newer chosen last (deployed now)."""
    ids = []
    for name in ("older", "newer"):
        run_id = start_run("utility", name, {}, url=url)
        finish_run(run_id, status=RunStatus.SUCCEEDED, url=url)
        deployments.choose(run_id, "utility", f"policy of {name}", {}, url=url)
        ids.append(run_id)
    return ids[0], ids[1]


def test_deleting_a_deployed_run_is_refused_in_one_line(store: str) -> None:
    _, newer = _deployed_runs(store)
    result = runner.invoke(app, ["runs", "delete", "--yes", str(newer)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "deployed now for utility" in lines[0] and "--with-deployments" in lines[0], lines
    assert get_run(newer, url=store) is not None
    assert deployments.deployed("utility", url=store).run_id == newer


def test_with_the_flag_it_says_what_it_removes_and_what_is_deployed_afterwards(store: str) -> None:
    older, newer = _deployed_runs(store)
    result = runner.invoke(app, ["runs", "delete", "--yes", "--with-deployments", str(newer)], terminal_width=300)
    assert result.exit_code == 0, result.output
    assert "1 deployment record" in result.output
    assert f"deployed now: utility runs 'policy of older' from run {older}" in result.output
    assert [r.id for r in list_runs(url=store)] == [older]
    result = runner.invoke(app, ["runs", "delete", "--yes", "--with-deployments", str(older)], terminal_width=300)
    assert "deployed now: nothing is deployed for utility" in result.output


def test_a_run_without_deployments_is_deleted_without_the_flag(store: str) -> None:
    run_id = start_run("utility", "plain", {}, url=store)
    finish_run(run_id, status=RunStatus.FAILED, url=store)
    result = runner.invoke(app, ["runs", "delete", "--yes", str(run_id)])
    assert result.exit_code == 0 and "deployed now" not in result.output, result.output
