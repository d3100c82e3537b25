"""Where runs' files live, and the one layer (fsspec) that writes, reads, lists and deletes them.

``DECISIONS_ARTIFACTS_URL`` chooses the root: unset, the store's local artifacts folder
(``artifacts_root``); set, any fsspec URL (a local folder, ``memory://``, ``s3://...``). A
run's files go below ``<root>/run-<id>/``: runs write into a local folder, ``publish`` copies
to a remote root, and readers go through ``location``, ``read_bytes`` or ``local_copies``
(remote files downloaded once into ``cache_root``).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from decisions.errors import InputError

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

    from decisions.store.records import ArtifactRecord

ENV_VAR = "DECISIONS_ARTIFACTS_URL"  # where runs' files live (unset: the store's local folder)
CACHE_ENV_VAR = "DECISIONS_ARTIFACTS_CACHE"  # where remote artifacts are downloaded (see cache_root)
LOCAL_PROTOCOLS = ("file", "local")  # fsspec protocols of the local file system
_PROTOCOL_END = re.compile(r"(::|://)")  # where a URL's protocol ends, as fsspec splits it


def get_protocol(url: str) -> str:
    """The fsspec protocol of ``url`` (what precedes its first ``://`` or ``::``, else ``file``),
    as ``fsspec.utils.get_protocol`` gives it but without importing fsspec."""
    parts = _PROTOCOL_END.split(url, maxsplit=1)
    return parts[0] if len(parts) > 1 else "file"


def masked(url: str) -> str:
    """``url`` with any ``user:password@`` password masked, for messages."""
    from decisions.store.db import masked_url

    return masked_url(url)


def _filesystem(url: str) -> tuple[AbstractFileSystem, str]:
    """The fsspec file system of ``url`` and the path within it, or a one-line ``InputError`` on ``ENV_VAR``
    (an unknown protocol, or one whose fsspec package is not installed)."""
    import fsspec

    protocol = get_protocol(url)
    try:
        fsspec.get_filesystem_class(protocol)
        return fsspec.core.url_to_fs(url)
    except ImportError as exc:
        problem = " ".join(str(exc).split()) or f"the fsspec package of '{protocol}' is not installed"
        raise InputError(ENV_VAR, f"'{masked(url)}': {problem}") from None
    except ValueError as exc:
        raise InputError(ENV_VAR, f"'{masked(url)}': {' '.join(str(exc).split())}") from None


def configured_url() -> str | None:
    """The artifacts root ``DECISIONS_ARTIFACTS_URL`` names: None when unset, an absolute ``file://``
    URL for a local folder, else the URL without a trailing ``/``.

    Raises:
        InputError: an unknown protocol, or one whose fsspec package is not installed.
    """
    raw = os.environ.get(ENV_VAR, "").strip()
    if not raw:
        return None
    _, path = _filesystem(raw)
    if is_local(raw):
        return Path(path).expanduser().resolve().as_uri()
    return raw.rstrip("/")


def artifacts_root(url: str | None = None) -> Path:
    """Folder (not created) for the files runs write: a local ``DECISIONS_ARTIFACTS_URL`` when set, else
    ``artifacts/`` in the store's folder (``db.store_folder``).

    Raises:
        InputError: on field ``DECISIONS_ARTIFACTS_URL`` when it is set but unusable.
    """
    from decisions.store.db import store_folder

    configured = configured_local_root()
    return configured if configured is not None else store_folder(url) / "artifacts"


def configured_local_root() -> Path | None:
    """The local folder ``DECISIONS_ARTIFACTS_URL`` names, if it names one (None when unset or remote)."""
    url = configured_url()
    return local_path(url) if url is not None else None


def is_local(url: str) -> bool:
    """Whether ``url`` (or a plain path) is on the local file system."""
    return get_protocol(url) in LOCAL_PROTOCOLS


def local_path(url: str) -> Path | None:
    """The local path of a ``file://`` URL or plain path; None for a remote URL."""
    if not is_local(url):
        return None
    return Path(_filesystem(url)[1])


def root_url(db_url: str | None = None) -> str:
    """Where runs' files live, without a trailing ``/``: ``DECISIONS_ARTIFACTS_URL``, else the
    local artifacts folder of the store at ``db_url``."""
    return configured_url() or artifacts_root(db_url).as_uri()


def join(base: str, *parts: str) -> str:
    """``base`` with ``parts`` appended, ``/``-separated."""
    return "/".join([base.rstrip("/"), *(part.strip("/") for part in parts)])


def run_url(run_id: int, db_url: str | None = None) -> str:
    """The folder of run ``run_id``'s files: ``<root_url>/run-<id>``."""
    return join(root_url(db_url), f"run-{run_id}")


def file_url(path: str | os.PathLike[str]) -> str:
    """The ``file://`` URL of a local path (made absolute)."""
    return Path(path).expanduser().resolve().as_uri()


def write_bytes(url: str, data: bytes) -> str:
    """Write ``data`` to the file at ``url`` (fsspec URL or local path), creating its folders; ``url``."""
    fs, path = _filesystem(url)
    fs.makedirs(posixpath.dirname(path), exist_ok=True)
    with fs.open(path, "wb") as stream:
        stream.write(data)
    return url


def put_file(source: str | os.PathLike[str], url: str) -> str:
    """Copy a local file to ``url`` (nothing to do when ``url`` is that very file); ``url``."""
    target = local_path(url)
    if target is not None and target.resolve() == Path(source).resolve():
        return url
    fs, path = _filesystem(url)
    fs.makedirs(posixpath.dirname(path), exist_ok=True)
    fs.put_file(os.fspath(source), path)
    return url


def read_bytes(url: str) -> bytes:
    """Read the file at ``url``.

    Raises:
        FileNotFoundError: there is none.
    """
    fs, path = _filesystem(url)
    with fs.open(path, "rb") as stream:
        return stream.read()


def list_files(url: str) -> list[str]:
    """Every file below the folder ``url``, as URLs of the same form, sorted (empty when it does not exist)."""
    fs, path = _filesystem(url)
    if not fs.exists(path):
        return []
    base = url.rstrip("/")
    root = path.rstrip("/")
    return sorted(join(base, found[len(root):]) for found in fs.find(path))


def delete_folder(url: str) -> bool:
    """Remove the folder ``url`` and everything in it; whether it existed."""
    fs, path = _filesystem(url)
    if not fs.exists(path):
        return False
    fs.rm(path, recursive=True)
    return True


def publish(run_id: int, files: Mapping[str, Path], folder: Path, db_url: str | None = None) -> dict[str, str]:
    """Artifact name -> URL to record for a run's local ``files``.

    With a remote root each file below the run's local ``folder`` is first copied to the same
    place below ``run_url(run_id)``; other files keep their ``file://`` URL.
    """
    remote = configured_url()
    if remote is None or is_local(remote):
        return {name: file_url(path) for name, path in files.items()}
    base, local = run_url(run_id, db_url), folder.resolve()
    urls = {}
    for name, path in files.items():
        resolved = Path(path).resolve()
        if resolved.is_relative_to(local):
            urls[name] = put_file(resolved, join(base, resolved.relative_to(local).as_posix()))
        else:
            urls[name] = file_url(resolved)
    return urls


def location(artifact: ArtifactRecord) -> str:
    """Where a recorded artifact lives: its ``url``, or the ``file://`` URL of its ``path`` for older rows."""
    return artifact.url or file_url(artifact.path)


def cache_root() -> Path:
    """The local folder remote artifacts are downloaded into: ``DECISIONS_ARTIFACTS_CACHE``, else
    ``artifacts/`` in the user's cache folder."""
    import platformdirs

    override = os.environ.get(CACHE_ENV_VAR, "").strip()
    return Path(override).expanduser() if override else Path(platformdirs.user_cache_dir("decisions")) / "artifacts"


def cached_path(url: str) -> Path:
    """Where the remote file at ``url`` is kept: ``cache_root()/<protocol>/<its path>``.

    Raises:
        InputError: on field ``artifact`` for a URL whose path climbs out of the cache (``..``).
    """
    _, path = _filesystem(url)
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts or not parts:
        raise InputError("artifact", f"'{masked(url)}' is not a file path that can be cached")
    return cache_root().joinpath(get_protocol(url), *parts)


def local_file(url: str) -> Path:
    """A local path holding the file at ``url``: the file itself when local, else its copy in
    ``cache_root`` (downloaded on first use; artifacts do not change once recorded).

    Raises:
        FileNotFoundError: a remote file that is not there (a local path is returned as it is).
    """
    path = local_path(url)
    if path is not None:
        return path
    target = cached_path(url)
    if not target.is_file():
        fs, remote = _filesystem(url)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.{os.getpid()}.part")
        try:
            fs.get_file(remote, os.fspath(partial))
            partial.replace(target)  # whole or not at all, for readers in other processes
        finally:
            partial.unlink(missing_ok=True)
    return target


def local_copies(record: object) -> dict[str, Path]:
    """Artifact name -> ``local_file`` of every artifact of a ``RunRecord``; a missing remote file
    keeps the path the run wrote, so readers report it as gone."""
    copies = {}
    for artifact in getattr(record, "artifacts", ()):
        try:
            copies[artifact.name] = local_file(location(artifact))
        except FileNotFoundError:
            copies[artifact.name] = Path(artifact.path)
    return copies


def report_folder(record: object) -> Path:
    """The local folder of a run record's saved report (its ``report`` artifact; a local copy when remote).

    Raises:
        FileNotFoundError: the run has no ``report`` artifact.
    """
    paths = local_copies(record)
    if "report" in paths:
        return paths["report"].parent
    raise FileNotFoundError(f"run {getattr(record, 'id', '?')}: no saved report among its artifacts")
