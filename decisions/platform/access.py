"""Who may do what: each write of the platform needs a role (``store.users.Role``).

With no user defined in the store, the platform is one local user's and everything is allowed. Once
users exist, the actor (the app's logged-in user; for the CLI and Python, the OS user: see
``store.who``) must be one of them with at least the action's role.
"""

from __future__ import annotations

from decisions.errors import InputError
from decisions.store.users import Role, get_user, has_users
from decisions.store.who import acting_user

NEEDS: dict[str, Role] = {
    "run": Role.OPERATOR,
    "decide": Role.OPERATOR,
    "record outcomes": Role.OPERATOR,
    "add assets": Role.OPERATOR,
    "deploy": Role.APPROVER,
    "roll back": Role.APPROVER,
    "retire assets": Role.APPROVER,
    "forget": Role.APPROVER,
    "delete runs": Role.APPROVER,
    "manage users": Role.APPROVER,
}
"""The least role of each action."""


class AccessDenied(InputError):
    """The actor may not do the action (``field`` is "user"); the CLI exits with code 2."""

    def __init__(self, problem: str) -> None:
        super().__init__("user", problem)


def may(role: Role | None, action: str) -> bool:
    """Whether ``role`` (None: no users are defined, the one local user) may do ``action``."""
    return role is None or role.rank >= NEEDS[action].rank


def require(action: str, *, user: str | None = None, url: str | None = None) -> str | None:
    """The actor's name (``user``, else ``store.who.acting_user``) once they may do ``action``.

    Raises:
        AccessDenied: users are defined and the actor is not one, or their role is below the action's.
    """
    if action not in NEEDS:
        raise ValueError(f"unknown action {action!r}")
    who = user or acting_user()
    if not has_users(url=url):
        return who
    found = get_user(who, url=url) if who else None
    if found is None:
        raise AccessDenied(f"{who!r} is not a user of this store: ask an approver to add you "
                           "(`decisions users add`)")
    if not may(found.role, action):
        raise AccessDenied(f"{who!r} is {found.role.with_article}: to {action} needs "
                           f"{NEEDS[action].with_article} or above")
    return who

