"""System check W001: SQLite shared by beat and worker must begin transactions IMMEDIATE."""

from __future__ import annotations

import django
from django.conf import settings
from django.core.management import call_command

from scheduler_app.checks import SQLITE, sqlite_transaction_mode, sqlite_warnings


def databases(**options: object) -> dict[str, dict[str, object]]:
    return {"default": {"ENGINE": SQLITE, "NAME": "db.sqlite3", "OPTIONS": options}}


def test_sqlite_in_deferred_mode_is_warned_with_the_fix() -> None:
    (message,) = sqlite_warnings(databases(timeout=20))
    assert message.id == "scheduler_app.W001"
    assert "'database is locked'" in message.msg
    if django.VERSION >= (5, 1):
        assert 'DATABASES["default"]["OPTIONS"]["transaction_mode"] = "IMMEDIATE"' in message.hint
    else:  # no such option before Django 5.1
        assert message.hint.startswith("use PostgreSQL")


def test_explicit_deferred_or_exclusive_is_warned_too() -> None:
    for mode in ("DEFERRED", "EXCLUSIVE"):
        warnings = sqlite_warnings(databases(transaction_mode=mode))
        assert [m.id for m in warnings] == ["scheduler_app.W001"]


def test_immediate_sqlite_and_postgresql_pass() -> None:
    assert sqlite_warnings(databases(transaction_mode="IMMEDIATE")) == []
    assert sqlite_warnings(databases(transaction_mode="immediate")) == []
    postgres = {"default": {"ENGINE": "django.db.backends.postgresql", "NAME": "app"}}
    assert sqlite_warnings(postgres) == []


def test_the_example_project_passes_its_own_check() -> None:
    sqlite = settings.DATABASES["default"]["ENGINE"] == SQLITE
    if sqlite and django.VERSION < (5, 1):
        # No IMMEDIATE mode before Django 5.1: the example project is warned (use PostgreSQL).
        assert [w.id for w in sqlite_transaction_mode()] == ["scheduler_app.W001"]
        return
    if sqlite:
        assert settings.DATABASES["default"]["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert sqlite_transaction_mode() == []
    call_command("check", fail_level="WARNING")  # registered: manage.py check runs it
