"""Where runs' files live (``DECISIONS_ARTIFACTS_URL``): the local default, a ``file://`` folder, and a
remote root (``memory://`` standing in for ``s3://``), through ``decisions.store.artifacts``."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import fsspec
import pandas as pd
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from decisions.errors import InputError
from decisions.kit.report import TablesReport
from decisions.platform.record import execute_recorded
from decisions.store import artifacts, artifacts_root, delete_run, dispose_engines, get_run, start_run
from decisions.store.artifacts import ENV_VAR


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    yield f"sqlite:///{tmp_path / 'store' / 'runs.db'}"
    dispose_engines()


@pytest.fixture
def memory_root(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``DECISIONS_ARTIFACTS_URL`` set to an empty in-memory root (fsspec's memory file system)."""
    root = "memory://decisions-test"
    fs = fsspec.filesystem("memory")
    if fs.exists("/decisions-test"):
        fs.rm("/decisions-test", recursive=True)
    monkeypatch.setenv(ENV_VAR, root)
    yield root
    if fs.exists("/decisions-test"):
        fs.rm("/decisions-test", recursive=True)


class _Report:
    """A job report writing two files (one in a subfolder), as a domain's report does."""

    metrics = {"value": 1.0}

    def save(self, directory: str | Path) -> dict[str, Path]:
        folder = Path(directory)
        (folder / "charts").mkdir(parents=True, exist_ok=True)
        (folder / "report.json").write_text('{"value": 1.0}')
        (folder / "charts" / "curve.png").write_bytes(b"\x89PNG")
        return {"report": folder / "report.json", "curve": folder / "charts" / "curve.png"}


def test_protocols_are_read_as_fsspec_reads_them() -> None:
    for url in ("s3://bucket/a", "memory://x", "file:///tmp/x", "/tmp/x", "relative/x", "simplecache::s3://b/k",
                "gs://b", "C:/x"):
        assert artifacts.get_protocol(url) == fsspec.utils.get_protocol(url), url


def test_the_default_root_is_the_stores_folder_and_rows_record_file_urls(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    folder = tmp_path / "store" / "artifacts"
    assert artifacts_root(url) == folder
    assert artifacts.root_url(url) == folder.as_uri()
    run_id = execute_recorded("toy", "local", {}, _Report, url=url)
    run = get_run(run_id, url=url)
    assert [(a.name, a.path, a.url) for a in run.artifacts] == [
        ("report", str(folder / f"run-{run_id}" / "report.json"), (folder / f"run-{run_id}" / "report.json").as_uri()),
        ("curve", str(folder / f"run-{run_id}" / "charts" / "curve.png"),
         (folder / f"run-{run_id}" / "charts" / "curve.png").as_uri()),
    ]
    assert artifacts.read_bytes(run.artifacts[1].url) == b"\x89PNG"
    assert artifacts.list_files(artifacts.run_url(run_id, url)) == sorted(a.url for a in run.artifacts)


def test_a_file_url_root_moves_the_local_folder(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "shared" / "artifacts"
    monkeypatch.setenv(ENV_VAR, elsewhere.as_uri() + "/")
    assert artifacts_root(url) == elsewhere
    assert artifacts.root_url(url) == elsewhere.as_uri()
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "plain" / ".." / "plain"))  # a path is a local folder too
    assert artifacts_root(url) == tmp_path / "plain"
    run_id = execute_recorded("toy", "moved", {}, _Report, url=url)
    assert get_run(run_id, url=url).artifacts[0].url == (tmp_path / "plain" / f"run-{run_id}" / "report.json").as_uri()


def test_a_remote_root_gets_the_run_files_and_their_urls(url: str, memory_root: str) -> None:
    run_id = execute_recorded("toy", "remote", {}, _Report, url=url)
    run = get_run(run_id, url=url)
    base = f"{memory_root}/run-{run_id}"
    assert [(a.name, a.url) for a in run.artifacts] == [
        ("report", f"{base}/report.json"), ("curve", f"{base}/charts/curve.png")
    ]
    assert Path(run.artifacts[0].path).parent == artifacts_root(url) / f"run-{run_id}"  # written locally first
    assert artifacts.read_bytes(run.artifacts[0].url) == b'{"value": 1.0}'
    assert artifacts.read_bytes(artifacts.location(run.artifacts[1])) == b"\x89PNG"
    assert artifacts.list_files(base) == [f"{base}/charts/curve.png", f"{base}/report.json"]

    deleted = delete_run(run_id, url=url)
    assert deleted.folders == (artifacts_root(url) / f"run-{run_id}",)
    assert artifacts.list_files(base) == []
    assert not MemoryFileSystem().exists(f"/decisions-test/run-{run_id}")


def test_write_read_list_and_delete(memory_root: str) -> None:
    folder = artifacts.join(memory_root, "run-7")
    assert artifacts.write_bytes(artifacts.join(folder, "a.txt"), b"a") == f"{memory_root}/run-7/a.txt"
    artifacts.write_bytes(artifacts.join(folder, "deep/b.bin"), b"b")
    assert artifacts.list_files(folder) == [f"{folder}/a.txt", f"{folder}/deep/b.bin"]
    assert artifacts.read_bytes(f"{folder}/deep/b.bin") == b"b"
    assert artifacts.delete_folder(folder) is True
    assert artifacts.delete_folder(folder) is False
    assert artifacts.list_files(folder) == []
    with pytest.raises(FileNotFoundError):
        artifacts.read_bytes(f"{folder}/a.txt")


def test_rows_recorded_before_urls_are_read_by_path(url: str, tmp_path: Path) -> None:
    from decisions.store.records import ArtifactRecord

    file = tmp_path / "old.txt"
    file.write_bytes(b"old")
    old = ArtifactRecord(name="old", path=str(file), media_type=None, url=None)
    assert artifacts.location(old) == file.as_uri()
    assert artifacts.read_bytes(artifacts.location(old)) == b"old"
    run_id = start_run("toy", "r", {}, url=url)
    assert get_run(run_id, url=url).artifacts == ()


def test_an_unusable_artifacts_url_is_one_line_naming_the_setting(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, "nosuch://bucket/x")
    with pytest.raises(InputError) as info:
        artifacts_root(url)
    assert str(info.value) == "DECISIONS_ARTIFACTS_URL: 'nosuch://bucket/x': Protocol not known: nosuch"
    try:
        import s3fs  # noqa: F401
    except ImportError:
        monkeypatch.setenv(ENV_VAR, "s3://bucket/runs")
        with pytest.raises(InputError) as info:
            artifacts.root_url(url)
        assert str(info.value) == "DECISIONS_ARTIFACTS_URL: 's3://bucket/runs': Install s3fs to access S3"


@dataclass(kw_only=True)
class _TableReport(TablesReport):
    """A domain-style report: one table and one plain field, saved as a folder of files."""

    table: pd.DataFrame = field(default_factory=lambda: pd.DataFrame({"hour": [0, 1], "price": [41.5, 39.25]}))
    scenario: str = "winter"


def test_a_remote_run_is_read_back_through_local_copies(
    url: str, memory_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv(artifacts.CACHE_ENV_VAR, str(cache))
    run_id = execute_recorded("toy", "remote", {}, lambda: _TableReport(metrics={"value": 2.0}), url=url)
    shutil.rmtree(artifacts_root(url))  # the worker's disk is gone: only the remote root has the files
    record = get_run(run_id, url=url)

    copies = artifacts.local_copies(record)
    assert copies["report"] == cache / "memory" / "decisions-test" / f"run-{run_id}" / "report.json"
    back = _TableReport.load(artifacts.report_folder(record))
    assert back.scenario == "winter" and back.metrics["value"] == 2.0
    pd.testing.assert_frame_equal(back.table, _TableReport().table)

    report = next(a for a in record.artifacts if a.name == "report")
    artifacts.write_bytes(artifacts.location(report), b"changed")
    assert artifacts.local_file(artifacts.location(report)).read_bytes() != b"changed"  # downloaded once
    artifacts.delete_folder(artifacts.run_url(run_id, url))
    shutil.rmtree(cache)
    assert artifacts.local_copies(record)["report"] == Path(report.path)  # gone everywhere: the path it was written to
    with pytest.raises(FileNotFoundError):
        _TableReport.load(artifacts.report_folder(record))


def test_a_cached_path_never_leaves_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(artifacts.CACHE_ENV_VAR, str(tmp_path))
    assert artifacts.cached_path("memory://root/run-1/a.csv") == tmp_path / "memory" / "root" / "run-1" / "a.csv"
    with pytest.raises(InputError, match="^artifact: 'memory://root/../../etc/passwd' is not a file path"):
        artifacts.cached_path("memory://root/../../etc/passwd")
    assert artifacts.local_file(str(tmp_path / "x.txt")) == tmp_path / "x.txt"  # local: the file itself


def test_runs_show_and_delete_name_the_remote_files(url: str, memory_root: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from decisions.cli import app

    monkeypatch.setenv("DECISIONS_DB_URL", url)
    monkeypatch.setenv("COLUMNS", "250")
    run_id = execute_recorded("toy", "remote", {}, _Report, url=url)
    cli = CliRunner()
    shown = cli.invoke(app, ["runs", "show", str(run_id)])
    assert shown.exit_code == 0
    assert f"artifact curve: {memory_root}/run-{run_id}/charts/curve.png" in shown.output
    deleted = cli.invoke(app, ["runs", "delete", str(run_id), "--yes"])
    assert deleted.exit_code == 0
    said = deleted.output.replace("\n", "")  # rich wraps long lines
    assert f"folder {artifacts_root(url) / f'run-{run_id}'}, folder {memory_root}/run-{run_id}" in said
    assert artifacts.list_files(f"{memory_root}/run-{run_id}") == []
