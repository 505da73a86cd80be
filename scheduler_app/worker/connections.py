"""Database connections of the worker's own hooks, outside any task.

Django checks its connections at the start and end of each HTTP request, and the task base
class does before each claim. The hooks a Celery worker's main process runs between tasks
(``task_received``, ``task_revoked``, the receive-lease renewal) have no such edge: a
connection a database restart killed stays in place, and every later use fails with "the
connection is closed" until the worker restarts. ``fresh`` drops such a connection before
each use, and after an error, so the next use reconnects.

A connection inside a caller's transaction (``atomic``) is never closed here: it is not
ours, and closing it would break that transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.db import InterfaceError, OperationalError, connections

T = TypeVar("T")

CONNECTION_ERRORS = (OperationalError, InterfaceError)
"""What a dropped, closed or refused database connection raises."""


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
