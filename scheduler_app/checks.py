"""Django system checks (``manage.py check``) for settings the scheduler depends on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core import checks

SQLITE = "django.db.backends.sqlite3"


@checks.register()
def sqlite_transaction_mode(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """SQLite shared by a beat and a worker needs ``BEGIN IMMEDIATE`` transactions.

    In SQLite's default (deferred) mode a transaction that reads, then writes, fails at once
    with "database is locked" when another process holds the write lock: SQLite refuses to wait
    there, whatever the ``timeout``. An outcome the worker could not record leaves its
    occurrence ``running`` until the lease runs out, and the task runs again.
    """
    return sqlite_warnings(settings.DATABASES)


def sqlite_warnings(databases: Mapping[str, Mapping[str, Any]]) -> list[checks.CheckMessage]:
    """W001 for each SQLite database of ``databases`` (a ``DATABASES`` setting) not IMMEDIATE."""
    messages: list[checks.CheckMessage] = []
    for alias, database in databases.items():
        if database.get("ENGINE") != SQLITE:
            continue
        mode = str(database.get("OPTIONS", {}).get("transaction_mode") or "DEFERRED")
        if mode.upper() != "IMMEDIATE":
            messages.append(
                checks.Warning(
                    f"database {alias!r} is SQLite with transaction_mode {mode}: a beat and a "
                    "worker sharing it fail with 'database is locked' instead of waiting",
                    hint=f'set DATABASES["{alias}"]["OPTIONS"]["transaction_mode"] = "IMMEDIATE" '
                    '(and a "timeout", e.g. 20 seconds), or use PostgreSQL',
                    id="scheduler_app.W001",
                )
            )
    return messages
