"""System check W001: SQLite shared by beat and worker must begin transactions IMMEDIATE."""

from __future__ import annotations

from django.conf import settings
from django.core.management import call_command

from scheduler_app.checks import SQLITE, sqlite_transaction_mode, sqlite_warnings


def databases(**options: object) -> dict[str, dict[str, object]]:
    return {"default": {"ENGINE": SQLITE, "NAME": "db.sqlite3", "OPTIONS": options}}


def test_sqlite_in_deferred_mode_is_warned_with_the_fix() -> None:
    (message,) = sqlite_warnings(databases(timeout=20))
    assert message.id == "scheduler_app.W001"
    assert "'database is locked'" in message.msg
    assert 'DATABASES["default"]["OPTIONS"]["transaction_mode"] = "IMMEDIATE"' in message.hint


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
    if settings.DATABASES["default"]["ENGINE"] == SQLITE:
        assert settings.DATABASES["default"]["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert sqlite_transaction_mode() == []
    call_command("check", fail_level="WARNING")  # registered: manage.py check runs it
