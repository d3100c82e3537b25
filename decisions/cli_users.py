"""``decisions users``: the named users of the store and their roles (add, list, set-role, set-password,
remove). Managing users needs an approver once any user exists; the first user added must be one.
Passwords are read without echo (twice), or from standard input with ``--password-stdin``.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.table import Table

from decisions import cli_checks
from decisions.cli_console import CliConsole
from decisions.cli_errors import clean_errors
from decisions.errors import InputError

console = CliConsole()
users_app = typer.Typer(no_args_is_help=True, help="Named users and their roles (viewer, operator, approver).")

ROLE_HELP = "viewer (reads), operator (also runs, decides, records outcomes) or approver (also deploys, rolls back, forgets, manages users)."


def _password(from_stdin: bool) -> str:
    """The new password: standard input's first line, or typed twice without echo."""
    if from_stdin:
        line = sys.stdin.readline()
        if not line:
            raise InputError("password", "standard input is empty")
        return line.rstrip("\r\n")
    return typer.prompt("Password", hide_input=True, confirmation_prompt=True, err=True)


@users_app.command("add")
@clean_errors
def users_add(
    name: Annotated[str, typer.Argument(help="The user's name (the CLI acts as the OS user's name).")],
    role: Annotated[str, typer.Option(help=ROLE_HELP)],
    password_stdin: Annotated[bool, typer.Option("--password-stdin", help="Read the password from standard input.")] = False,
) -> None:
    """Add a user with a role."""
    from decisions.store.users import check_role

    check_role(role)
    cli_checks.allowed("manage users")
    from decisions.store.users import add_user

    record = add_user(name, _password(password_stdin), role)
    console.print(f"user {record.name!r} added as {record.role.value}", highlight=False)


@users_app.command("list")
@clean_errors
def users_list() -> None:
    """List the users, their roles, who added them and when."""
    from decisions.store.users import list_users

    found = list_users()
    if not found:
        console.print("no users: the platform is one local user's (everything is allowed)", highlight=False)
        return
    table = Table("user", "role", "added by", "added (UTC)")
    for user in found:
        table.add_row(user.name, user.role.value, user.created_by or "", f"{user.created_at:%Y-%m-%d %H:%M}")
    console.print(table)


@users_app.command("set-role")
@clean_errors
def users_set_role(
    name: Annotated[str, typer.Argument(help="The user.")],
    role: Annotated[str, typer.Argument(help=ROLE_HELP)],
) -> None:
    """Give a user another role."""
    cli_checks.allowed("manage users")
    from decisions.store.users import set_role

    record = set_role(name, role)
    console.print(f"user {record.name!r} is now {record.role.value}", highlight=False)


@users_app.command("set-password")
@clean_errors
def users_set_password(
    name: Annotated[str, typer.Argument(help="The user.")],
    password_stdin: Annotated[bool, typer.Option("--password-stdin", help="Read the password from standard input.")] = False,
) -> None:
    """Replace a user's password."""
    cli_checks.allowed("manage users")
    from decisions.store.users import set_password

    set_password(name, _password(password_stdin))
    console.print(f"password of {name!r} replaced", highlight=False)


@users_app.command("remove")
@clean_errors
def users_remove(name: Annotated[str, typer.Argument(help="The user.")]) -> None:
    """Remove a user (what they did keeps their name)."""
    cli_checks.allowed("manage users")
    from decisions.store.users import remove_user

    remove_user(name)
    console.print(f"user {name!r} removed", highlight=False)
