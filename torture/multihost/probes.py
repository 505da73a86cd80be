"""What survives a transaction-mode pooler, shown on the harness's own PgBouncer.

Each probe uses two plain psycopg connections, A and B, on the ``probe`` pool (two server
connections, most recently used first). A does something that leaves state on its server
connection; B then holds that same server connection in an open transaction, so A's next
statement runs on the other server connection, as it would at any moment under real load.
What A then sees is the verdict: the state followed it (safe) or stayed behind (unsafe).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

import psycopg


@dataclass(frozen=True)
class Probe:
    name: str
    used_by_project: str  # where the project (or Django for it) does this, or "no"
    safe: bool  # what the run observed
    observed: str
    required_safe: bool  # the run fails when a setting the docs recommend proves unsafe

    def line(self) -> str:
        verdict = "safe" if self.safe else "UNSAFE"
        return f"{verdict:6} {self.name}: {self.observed} (project: {self.used_by_project})"

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@contextlib.contextmanager
def _pair(url: str, **options: Any) -> Iterator[tuple[psycopg.Connection[Any], Any]]:
    a = psycopg.connect(url, autocommit=True, **options)
    b = psycopg.connect(url, autocommit=False, **options)
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def _backend(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT pg_backend_pid()").fetchone()
    return int(row[0]) if row else 0


def _after_move(url: str, leave: str, read: str) -> tuple[int, int, Any]:
    """A runs ``leave``, B takes A's server connection, A runs ``read`` on the other one:
    (A's first backend pid, A's next backend pid, the first value ``read`` returned)."""
    with _pair(url) as (a, b):
        a.execute(leave)
        held = _backend(b)  # B's implicit transaction stays open until b.commit()
        now = _backend(a)
        row = a.execute(read).fetchone()
        b.commit()
        b.execute("SELECT pg_advisory_unlock_all()")  # what A left behind on B's connection
        b.commit()
    return held, now, row[0] if row else None


def session_set(url: str) -> Probe:
    held, now, value = _after_move(
        url, "SET statement_timeout = '1234ms'", "SHOW statement_timeout"
    )
    return Probe(
        "session SET (statement_timeout)",
        "no: only SET LOCAL / SET CONSTRAINTS (partition DDL), which end with the transaction",
        value == "1234ms",
        f"A set 1234ms on backend {held}, then read {value!r} on backend {now}",
        required_safe=False,
    )  # fmt: skip


def time_zone(url: str) -> Probe:
    held, now, value = _after_move(url, "SET TIME ZONE 'Asia/Tokyo'", "SHOW TimeZone")
    return Probe(
        "SET TIME ZONE (tracked by PgBouncer)",
        "Django, on connect, when the server's TimeZone is not UTC",
        value == "Asia/Tokyo",
        f"A set Asia/Tokyo on backend {held}, then read {value!r} on backend {now}",
        required_safe=True,
    )  # fmt: skip


def advisory_lock(url: str) -> Probe:
    held, now, released = _after_move(
        url, "SELECT pg_advisory_lock(7431)", "SELECT pg_advisory_unlock(7431)"
    )
    return Probe(
        "session advisory lock",
        "no: only partition maintenance's pg_try_advisory_xact_lock, held for one transaction",
        bool(released),
        f"A locked on backend {held}; unlock on backend {now} returned {bool(released)}",
        required_safe=False,
    )  # fmt: skip


def hold_cursor(url: str) -> Probe:
    """Django's ``QuerySet.iterator()`` outside a transaction: DECLARE ... WITH HOLD."""
    with _pair(url) as (a, b):
        cursor = a.cursor("multihost_probe", withhold=True)
        cursor.execute("SELECT generate_series(1, 100)")
        first = cursor.fetchmany(10)
        held = _backend(b)
        now = _backend(a)
        try:
            more = cursor.fetchmany(10)
            observed = f"fetched {len(first)} then {len(more)} rows on backend {now}"
            safe = len(more) == 10
        except psycopg.Error as error:
            observed = f"declared on backend {held}; next fetch: {type(error).__name__}"
            safe = False
        b.commit()
        with contextlib.suppress(psycopg.Error):
            cursor.close()
    return Probe(
        "server-side cursor (iterator() without DISABLE_SERVER_SIDE_CURSORS)",
        "export_occurrences, export_audit, contract export: QuerySet.iterator()",
        safe, observed, required_safe=False,
    )  # fmt: skip


def _prepared(url: str, threshold: int | None) -> tuple[bool, str]:
    with _pair(url, prepare_threshold=threshold) as (a, b):
        query = "SELECT count(*) FROM pg_class WHERE relkind = %s"
        a.execute(query, ["r"])
        try:
            b.execute(query, ["r"])  # lands on A's server connection
            a.execute(query, ["r"])  # and A on the other one
            b.commit()
            return True, "A and B ran the same query on shared server connections"
        except psycopg.Error as error:
            return False, f"{type(error).__name__}: {str(error).strip().splitlines()[0]}"


def prepared_statements(url: str) -> Probe:
    safe, observed = _prepared(url, 0)
    return Probe(
        "prepared statements (psycopg prepare_threshold=0)",
        "no: Django 5.2 passes prepare_threshold=None unless OPTIONS sets it",
        safe, observed, required_safe=False,
    )  # fmt: skip


def unprepared_statements(url: str) -> Probe:
    safe, observed = _prepared(url, None)
    return Probe(
        "no prepared statements (prepare_threshold=None, Django's default)",
        "every beat and worker query", safe, observed, required_safe=True,
    )  # fmt: skip


PROBES: tuple[Callable[[str], Probe], ...] = (
    unprepared_statements,
    prepared_statements,
    time_zone,
    session_set,
    advisory_lock,
    hold_cursor,
)


def run_probes(url: str) -> list[Probe]:
    return [probe(url) for probe in PROBES]
