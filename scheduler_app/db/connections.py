"""Database connections of the worker's own hooks, of each delivery and of each beat tick.

Django checks its connections at the start and end of each HTTP request, and the task base
class does before each claim. The hooks a Celery worker's main process runs between tasks
(``task_received``, ``task_revoked``, the receive-lease renewal) have no such edge: a
connection a database restart killed stays in place, and every later use fails with "the
connection is closed" until the worker restarts. ``fresh`` drops such a connection before
each use, and after an error, so the next use reconnects.

A connection inside a caller's transaction (``atomic``) is never closed here: it is not
ours, and closing it would break that transaction.

Before each scheduled delivery and each beat tick ``close_old`` does what Django does between
requests (``close_old_connections``), except the health check (``CONN_HEALTH_CHECKS``: a
``SELECT 1`` round trip before the first query) of a connection the previous delivery or tick
used less than ``RECENTLY_USED`` ago: a worker busy with short tasks, or a beat ticking often,
would otherwise pay one extra round trip each time. A connection that errored is still
checked, and one that died within that second fails the claim, which hands the delivery back
to the broker (``worker.redelivery``) and closes it, so the next delivery reconnects (in the
beat: the tick fails as a database error, and the next tick reconnects).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections

T = TypeVar("T")

CONNECTION_ERRORS = (OperationalError, InterfaceError)
"""What a dropped, closed or refused database connection raises."""


RECENTLY_USED = 1.0
"""Seconds after a delivery (or a tick) used a connection during which the next one skips its
health check."""
_used_at: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
"""``time.monotonic()`` of each connection's last use by a delivery (connections are per
thread: each thread's own)."""


def mark_used(now: float | None = None) -> None:
    """A delivery (or a beat tick) has just used this thread's default connection (the one the
    claim and the outcome, or the tick's statements, run on) without an error. Other aliases
    are left to Django's check."""
    conn = connections[DEFAULT_DB_ALIAS]  # this thread's wrapper (``connection`` is a proxy)
    if conn.connection is not None and not conn.errors_occurred:
        _used_at[conn] = time.monotonic() if now is None else now


def close_old(now: float | None = None) -> None:
    """Django's ``close_old_connections`` for a delivery about to claim (or a tick about to
    start), minus the health check of a connection used less than ``RECENTLY_USED`` seconds
    ago."""
    at = time.monotonic() if now is None else now
    for conn in connections.all(initialized_only=True):
        conn.close_if_unusable_or_obsolete()  # errored or past CONN_MAX_AGE: closed here
        used = _used_at.get(conn)
        if conn.connection is not None and used is not None and at - used < RECENTLY_USED:
            checked: Any = conn  # the stubs lack Django's flag (Django 4.1+)
            checked.health_check_done = True  # no SELECT 1 before the claim


def drop_unusable() -> None:
    """Close this thread's connections that errored and fail a health check, or outlived
    ``CONN_MAX_AGE`` (Django's ``close_old_connections``, minus open transactions)."""
    for conn in connections.all(initialized_only=True):
        if not conn.in_atomic_block:
            conn.close_if_unusable_or_obsolete()


def drop_broken() -> None:
    """After a connection error: close this thread's connections, so the next use opens new
    ones (the failed one may look open to Django while its socket is gone)."""
    for conn in connections.all(initialized_only=True):
        if not conn.in_atomic_block:
            conn.close()


def fresh(use: Callable[[], T]) -> T:
    """Run ``use`` (some queries) on a usable connection.

    A connection reused from an earlier call may have died while idle (a database restart,
    a pooler that closed it): its failure closes it and ``use`` runs once more, on a new
    one. A failure on a connection opened for this call is raised at once (the database
    is down: one try per call, so a hook never waits twice for a connect timeout), after
    closing it so the next call reconnects. ``use`` must be safe to run twice (the hooks'
    writes are compare-and-set updates).
    """
    drop_unusable()
    reused = any(conn.connection is not None for conn in connections.all(initialized_only=True))
    try:
        return _once(use)
    except CONNECTION_ERRORS:
        if not reused or _in_transaction():
            raise
    return _once(use)


def _once(use: Callable[[], T]) -> T:
    try:
        return use()
    except CONNECTION_ERRORS:
        drop_broken()
        raise


def _in_transaction() -> bool:
    return any(conn.in_atomic_block for conn in connections.all(initialized_only=True))
