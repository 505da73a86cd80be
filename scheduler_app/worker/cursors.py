"""Cursors for the worker's own statements: the values sent apart from the statement's text.

Django's PostgreSQL backend on psycopg 3 binds parameters on the client by default
(``OPTIONS["server_side_binding"]`` unset): every execute quotes each value into a new
statement string, Python work on every task, and PostgreSQL plans that new text each time.
The worker's claim and outcome statements are the same text on every task, so they run on a
server-binding cursor: the text and the values travel apart (psycopg converts the text once
and keeps it), and PostgreSQL can prepare them.

Prepared statements stay off unless the project opts in with
``DATABASES[...]["OPTIONS"]["prepare_threshold"]`` (psycopg 3; Django passes ``None``, "never
prepare", by default): psycopg then prepares a statement on the server once a connection has
run it that many times, and PostgreSQL stops planning it per task. Only these cursors are
affected: Django's own queries keep client-side binding, which psycopg never prepares. Behind
PgBouncer in transaction mode leave it unset unless PgBouncer is 1.21 or later with
``max_prepared_statements`` above 0 (docs/deployment.md).

psycopg 2 and other databases get Django's ordinary cursor.
"""

from __future__ import annotations

from typing import Any

from django.db import connection

try:
    import psycopg
except ImportError:  # psycopg 2, or no PostgreSQL driver at all
    psycopg = None  # type: ignore[assignment]


def statement_cursor() -> Any:
    """A cursor (Django's wrapper: query logging, error translation, execute wrappers) on
    the default connection, binding its values on the server when the driver can."""
    raw = _raw_connection()
    if raw is None:
        return connection.cursor()
    connection.validate_thread_sharing()
    with connection.wrap_database_errors:
        cursor = psycopg.Cursor(raw)
    db: Any = connection  # the stubs type make_cursor's argument as Django's own wrapper
    return db.make_debug_cursor(cursor) if db.queries_logged else db.make_cursor(cursor)


def _raw_connection() -> Any:
    """The psycopg 3 connection under Django's, opened (and health-checked) as
    ``connection.cursor()`` would; None for any other driver."""
    if psycopg is None or connection.vendor != "postgresql":
        return None
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    raw = connection.connection
    return raw if isinstance(raw, psycopg.Connection) else None


def prepares() -> bool:
    """Whether the default connection prepares the worker's statements (the opt-in)."""
    raw = _raw_connection()
    return raw is not None and raw.prepare_threshold is not None
