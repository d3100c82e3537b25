"""``decisions db``: the run store's schema revision (``current``) and its migration (``upgrade``).

The store is ``DECISIONS_DB_URL`` (or the default SQLite file), as for every other command. Each
command prints one line; an unusable store is one ``error:`` line on stderr and exit code 2.
"""

from __future__ import annotations

import typer
from rich.markup import escape

from decisions.cli_console import CliConsole
from decisions.cli_errors import clean_errors

db_app = typer.Typer(no_args_is_help=True, help="Show or migrate the run store's schema revision.")

console = CliConsole()


def _say(line: str) -> None:
    """Print one line, unwrapped and uncoloured."""
    console.print(escape(line), highlight=False, soft_wrap=True)


@db_app.command("current")
@clean_errors
def db_current() -> None:
    """Print the store's revision, the head this code needs and what to do about a difference."""
    from decisions.store import migrations
    from decisions.store.db import UPGRADE_COMMAND, database_url, masked_url, store_state

    url = database_url()
    state, head = store_state(url)
    if state.revision == head:
        verdict = "at head"
    elif state.is_empty:
        verdict = "empty: built at head on first use"
    elif state.revision is not None and not migrations.is_known(state.revision):
        verdict = "ahead of this code: use the release that wrote it"
    else:
        verdict = f"behind: run `{UPGRADE_COMMAND}`"
    _say(f"'{masked_url(url)}': revision {state.describe()}, head {head} ({verdict})")


@db_app.command("upgrade")
@clean_errors
def db_upgrade() -> None:
    """Migrate the store to the head revision (a store made before migrations too; an empty one is built)."""
    from decisions.store.db import database_url, masked_url, store_state, upgrade_store

    url = database_url()
    before, _ = store_state(url)
    start, head = upgrade_store(url)
    where = f"'{masked_url(url)}'"
    if start == head:
        _say(f"{where} is already at revision {head} (head)")
    elif before.is_empty and start is None:
        _say(f"built {where} at revision {head} (it was empty)")
    else:
        _say(f"upgraded {where} from {before.describe() if start is None else start} to revision {head}")
