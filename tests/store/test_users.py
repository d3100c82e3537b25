"""Named users (``store.users``) and who may do what (``platform.access``): hashes at rest, roles, the
last approver kept, refusals naming the field, revision 0006 carrying a store forward and back."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from decisions.errors import InputError
from decisions.platform.access import AccessDenied, may, require
from decisions.store import db, dispose_engines, get_run, migrations, start_run
from decisions.store.users import (
    Role,
    add_user,
    check_password,
    get_user,
    has_users,
    list_users,
    remove_user,
    set_password,
    set_role,
)
from decisions.store.who import acting_as
from tests.store.conftest import BACKENDS
from tests.store.test_migrations import HEAD, _kept_run_at, _plain_engine, _schema

pytestmark = pytest.mark.usefixtures("no_cached_engines")


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


def test_passwords_are_kept_as_argon2id_hashes_and_checked(any_store_url: str) -> None:
    url = any_store_url
    assert not has_users(url=url)
    boss = add_user("boss", "correct horse", "approver", created_by="setup", url=url)
    add_user("ann", "battery staple", "operator", url=url)
    assert (boss.name, boss.role, boss.created_by) == ("boss", Role.APPROVER, "setup") and has_users(url=url)
    engine = _plain_engine(url)
    try:
        with engine.connect() as connection:
            stored = dict(connection.exec_driver_sql("SELECT name, password_hash FROM users").fetchall())
    finally:
        engine.dispose()
    assert all(h.startswith("$argon2id$") for h in stored.values()) and "correct horse" not in stored["boss"]
    assert stored["boss"] != stored["ann"]
    assert check_password("boss", "correct horse", url=url) == boss
    assert check_password("boss", "battery staple", url=url) is None
    assert check_password("nobody", "correct horse", url=url) is None  # the same answer as a wrong password
    set_password("ann", "a new phrase", url=url)
    assert check_password("ann", "battery staple", url=url) is None
    assert check_password("ann", "a new phrase", url=url).name == "ann"


def test_roles_change_and_the_last_approver_stays(url: str) -> None:
    with pytest.raises(InputError, match=r"^role: the first user must be an approver"):
        add_user("ann", "battery staple", "operator", url=url)
    add_user("boss", "correct horse", "approver", url=url)
    add_user("ann", "battery staple", "viewer", url=url)
    assert [(u.name, u.role) for u in list_users(url=url)] == [("ann", Role.VIEWER), ("boss", Role.APPROVER)]
    with pytest.raises(InputError, match=r"^role: 'boss' is the last approver"):
        set_role("boss", "operator", url=url)
    with pytest.raises(InputError, match=r"^name: 'boss' is the last approver"):
        remove_user("boss", url=url)
    assert set_role("ann", "approver", url=url).role is Role.APPROVER
    set_role("boss", "operator", url=url)
    remove_user("boss", url=url)
    assert [u.name for u in list_users(url=url)] == ["ann"] and get_user("boss", url=url) is None


@pytest.mark.parametrize(("call", "field", "problem"), [
    (lambda url: add_user(" boss", "correct horse", "approver", url=url), "name", "without spaces"),
    (lambda url: add_user("boss", "short", "approver", url=url), "password", "8 to 1024 characters"),
    (lambda url: add_user("boss", "correct horse", "admin", url=url), "role", "'admin' is not a role"),
    (lambda url: add_user("ann", "correct horse", "approver", url=url), "name", "exists already"),
    (lambda url: set_role("nobody", "viewer", url=url), "name", "no user is named 'nobody'"),
    (lambda url: remove_user("nobody", url=url), "name", "no user is named 'nobody'"),
])
def test_refusals_name_the_field_and_change_nothing(url: str, call, field: str, problem: str) -> None:
    add_user("ann", "battery staple", "approver", url=url)
    with pytest.raises(InputError) as refused:
        call(url)
    assert refused.value.field == field and problem in refused.value.problem
    assert [(u.name, u.role) for u in list_users(url=url)] == [("ann", Role.APPROVER)]


def test_each_role_may_do_its_actions_and_no_more(url: str) -> None:
    with acting_as("stranger"):
        assert require("deploy", url=url) == "stranger"  # no users: one local user may do everything
    add_user("boss", "correct horse", "approver", url=url)
    add_user("ann", "battery staple", "operator", url=url)
    add_user("vic", "just looking", "viewer", url=url)
    for action in ("run", "decide", "record outcomes", "deploy", "forget", "manage users"):
        assert require(action, user="boss", url=url) == "boss"
    assert require("run", user="ann", url=url) == "ann" and require("decide", user="ann", url=url) == "ann"
    for user, action in (("ann", "deploy"), ("ann", "forget"), ("ann", "roll back"), ("vic", "run"),
                         ("vic", "decide"), ("vic", "deploy")):
        with pytest.raises(AccessDenied, match=rf"^user: '{user}' is an? (operator|viewer): to {action} needs"):
            require(action, user=user, url=url)
    with acting_as("stranger"), pytest.raises(AccessDenied, match=r"^user: 'stranger' is not a user of this store"):
        require("run", url=url)
    assert may(None, "forget") and may(Role.OPERATOR, "run") and not may(Role.VIEWER, "run")


def test_a_run_names_who_started_it(url: str) -> None:
    with acting_as("ann"):
        run_id = start_run("gas_storage", "mine", {}, url=url)
    assert get_run(run_id, url=url).started_by == "ann"


@pytest.mark.parametrize("backend", BACKENDS)
def test_0006_carries_a_store_at_0005_forward_and_back(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = _kept_run_at("0005", "gas_storage", backend, request, tmp_path)
    assert db.upgrade_store(url) == ("0005", HEAD)
    schema = _schema(url)
    assert schema["runs"]["columns"][-1] == ("started_by", True) and "users" in schema
    kept = get_run(1, url=url)
    assert (kept.name, kept.started_by) == ("kept", None)
    add_user("boss", "correct horse", "approver", url=url)
    dispose_engines()
    engine = _plain_engine(url)
    try:
        with engine.begin() as connection:
            migrations.downgrade(connection, "0005")
            assert "users" not in sa.inspect(connection).get_table_names()
            assert connection.exec_driver_sql("SELECT name FROM runs").scalars().all() == ["kept"]
    finally:
        engine.dispose()
