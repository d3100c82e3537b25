"""Alembic migrations of the run store, configured in code: ``head``, ``is_known``, ``current``
(read without importing Alembic), and ``upgrade``, ``downgrade``, ``stamp`` run on a connection
the caller holds in a locked transaction. Revision 0001 is the schema before migrations; adding
a revision: ``docs/notes/core.md``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, inspect, text

if TYPE_CHECKING:
    from alembic.config import Config

SCRIPT_LOCATION = Path(__file__).resolve().parent  # env.py, script.py.mako and versions/
VERSION_TABLE = "alembic_version"
STORE_TABLES = ("runs", "metrics", "artifacts", "deployments")  # none of them: an empty store


class MigrationError(RuntimeError):
    """Alembic could not run a migration command (its ``CommandError``, in one line)."""


def config(url: str | None = None) -> Config:
    """An Alembic configuration of these migrations, built in code (``url`` for Alembic's own
    connections, e.g. offline SQL)."""
    from alembic.config import Config

    alembic_config = Config()
    alembic_config.set_main_option("script_location", str(SCRIPT_LOCATION))
    if url:
        alembic_config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return alembic_config


def _assigned(path: Path, names: tuple[str, ...]) -> dict[str, str | None]:
    """The constant values a revision file assigns at module level to ``names``."""
    values: dict[str, str | None] = {}
    for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        else:
            continue
        if target in names and isinstance(value, ast.Constant) and isinstance(value.value, str | None):
            values[target] = value.value
    return values


@lru_cache(maxsize=1)
def revisions() -> dict[str, str | None]:
    """Revision id -> ``down_revision`` (None for the first) of ``versions/``, read once per process."""
    graph: dict[str, str | None] = {}
    for path in sorted((SCRIPT_LOCATION / "versions").glob("*.py")):
        if path.name.startswith("__"):
            continue
        values = _assigned(path, ("revision", "down_revision"))
        if not values.get("revision"):
            raise RuntimeError(f"{path} assigns no revision id")
        graph[str(values["revision"])] = values.get("down_revision")
    return graph


def head() -> str:
    """The newest revision id (e.g. ``"0002"``): the one this code reads and writes."""
    graph = revisions()
    heads = sorted(set(graph) - set(graph.values()))
    if len(heads) != 1:
        raise RuntimeError(f"the migrations in {SCRIPT_LOCATION / 'versions'} have heads {heads}, not one")
    return heads[0]


def is_known(revision: str) -> bool:
    """Whether ``revision`` is one of this code's (False for one written by newer code)."""
    return revision in revisions()


@dataclass(frozen=True)
class StoreState:
    """Where a store's schema stands."""

    revision: str | None  # None without a version table
    has_tables: bool  # any run table

    @property
    def is_empty(self) -> bool:
        """No revision and no run tables: a new store, built from nothing."""
        return self.revision is None and not self.has_tables

    @property
    def is_legacy(self) -> bool:
        """Run tables but no revision: made by a release before migrations (``create_all``)."""
        return self.revision is None and self.has_tables

    def describe(self) -> str:
        """The revision in words: ``"0001"``, ``"created before migrations"`` or ``"empty"``."""
        if self.revision is not None:
            return self.revision
        return "created before migrations" if self.has_tables else "empty"


def current(connection: Connection) -> StoreState:
    """A store's revision and whether it has run tables."""
    tables = set(inspect(connection).get_table_names())
    revision = None
    if VERSION_TABLE in tables:
        revision = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
    return StoreState(revision, any(name in tables for name in STORE_TABLES))


def _run(command_name: str, connection: Connection, revision: str) -> None:
    """Run Alembic's ``command_name`` (``upgrade``, ``downgrade``, ``stamp``) to ``revision`` on ``connection``."""
    from alembic import command
    from alembic.util import CommandError

    alembic_config = config()
    alembic_config.attributes["connection"] = connection
    try:
        getattr(command, command_name)(alembic_config, revision)
    except CommandError as exc:
        raise MigrationError(" ".join(str(exc).split())) from exc


def upgrade(connection: Connection, target: str = "head") -> None:
    """Run the migrations to ``target`` on ``connection``, inside the caller's locked transaction.

    Raises:
        MigrationError: Alembic refused (e.g. an unknown revision).
    """
    _run("upgrade", connection, target)


def downgrade(connection: Connection, target: str) -> None:
    """Undo the migrations after ``target`` on ``connection``, inside the caller's locked transaction.

    Raises:
        MigrationError: Alembic refused.
    """
    _run("downgrade", connection, target)


def stamp(connection: Connection, revision: str) -> None:
    """Record ``revision`` as the store's without running anything (a store made before migrations).

    Raises:
        MigrationError: Alembic refused.
    """
    _run("stamp", connection, revision)
