"""``db.cursors.fetch_one``, the worker's claim and outcome cursor (issue 39: the worker's Python
per delivery): it looks the connection up once per statement, and that is the calling
thread's own connection; it reads ``timestamptz`` with psycopg's compiled parser, and must
read exactly what Django's own cursor reads (the same instants, the same ``tzinfo``, the same
errors), logged or not."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC
from typing import Any

import psycopg.pq
import pytest
from django.db import DataError, connection
from django.db.backends.postgresql.psycopg_any import BaseTzLoader
from django.test.utils import CaptureQueriesContext

from scheduler_app.db import cursors
from scheduler_app.db.cursors import fetch_one, statement

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

TIMES = (
    "'2026-01-05 01:00:10.123456+00'",
    "'2026-03-29 01:30:00+02'",  # an offset: the session's zone decides what comes back
    "'2026-10-25 02:30:00 Europe/Paris'",
    "'0001-01-01 00:00:00+00'",
    "'9999-12-31 23:59:59.999999+00'",
    "'infinity'",
    "NULL",
)


def django_reads(sql: str) -> tuple[Any, ...]:
    with connection.cursor() as cursor:
        cursor.execute(sql)
        row = cursor.fetchone()
    assert row is not None
    return tuple(row)


def outcome(read: Callable[[], Any]) -> tuple[Any, ...]:
    """What a read gives: its values, each with its ``tzinfo`` and ISO text, or its error."""
    try:
        row = read()
    except DataError as exc:
        return ("error", str(exc))
    return tuple(
        None if value is None else (value, type(value.tzinfo), value.tzinfo, value.isoformat())
        for value in row
    )


@pytest.fixture(params=["UTC", "America/New_York"])
def session_zone(request: pytest.FixtureRequest) -> Iterator[str]:
    """The session's ``TimeZone`` (Django sets UTC; a pooler or a role may not)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SET TIME ZONE '{request.param}'")
    try:
        yield request.param
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET TIME ZONE 'UTC'")


@pytest.mark.parametrize("value", TIMES)
def test_fetch_one_reads_times_as_djangos_cursor_does(session_zone: str, value: str) -> None:
    """The same values, ``tzinfo`` and ISO text, or the same error (year 1 read in New York
    is before year 1; ``infinity`` has no Python datetime)."""
    sql = f"SELECT {value}::timestamptz, {value}::timestamptz"
    expected = outcome(lambda: django_reads(sql))
    assert outcome(lambda: fetch_one(statement(sql), {})) == expected
    assert outcome(lambda: fetch_one(statement(sql), {})) == expected  # prepared by now
    with CaptureQueriesContext(connection) as queries:  # the logged path
        assert outcome(lambda: fetch_one(statement(sql), {})) == expected
    assert [query["sql"] for query in queries.captured_queries] == [sql]
    if session_zone == "UTC" and value != "NULL" and "infinity" not in value:
        assert expected[0] != "error"


@pytest.mark.django_db(transaction=True)
def test_fetch_one_runs_on_the_calling_threads_connection() -> None:
    sql = statement("SELECT pg_backend_pid()")
    mine = fetch_one(sql, {})
    theirs: list[Any] = []

    def other() -> None:
        try:
            theirs.append(fetch_one(sql, {}))
        finally:
            connection.close()

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert mine is not None and theirs and theirs[0] is not None
    assert theirs[0] != mine
    assert fetch_one(sql, {}) == mine


def test_the_compiled_parser_is_the_one_in_use() -> None:
    """Not a test of nothing: with psycopg's compiled module installed, ``fetch_one`` reads
    times through it."""
    if cursors._compiled is None:
        pytest.skip("psycopg without its compiled module")
    connection.ensure_connection()
    raw: Any = connection.connection
    oid = raw.adapters.types["timestamptz"].oid
    loader = cursors._fast_times(raw.adapters.get_loader(oid, psycopg.pq.Format.TEXT))
    assert loader is not None
    assert loader.timezone is connection.timezone


# --- a project's own loader (review 20) ------------------------------------------------------


class CountingTzLoader(BaseTzLoader):
    """Django's loader (same ``load``) with a constructor of its own: a project's loader that
    may read differently (psycopg's internals are not the same in every release, so this one
    only counts)."""

    timezone = UTC
    made = 0

    def __init__(self, oid: int, context: Any = None) -> None:
        super().__init__(oid, context)
        type(self).made += 1


@pytest.fixture
def counting_loader() -> Iterator[None]:
    connection.ensure_connection()
    raw: Any = connection.connection
    oid = raw.adapters.types["timestamptz"].oid
    before = raw.adapters.get_loader(oid, psycopg.pq.Format.TEXT)
    raw.adapters.register_loader(oid, CountingTzLoader)
    try:
        yield
    finally:
        raw.adapters.register_loader(oid, before)


def test_a_customised_django_loader_is_not_replaced(counting_loader: None) -> None:
    sql = "SELECT '2026-01-05 01:00:10+00'::timestamptz"
    with connection.cursor() as cursor:
        cursor.execute(sql)
        expected = cursor.fetchone()
    made = CountingTzLoader.made
    assert fetch_one(statement(sql), {}) == expected
    assert CountingTzLoader.made > made  # the project's loader read it, not the compiled one
