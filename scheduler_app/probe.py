"""What a tick asks first: the earliest due instant, and whether the outbox has work.

On PostgreSQL one statement, ``SELECT (earliest next_run_at), EXISTS (publishable row)``,
compiled once by the ORM and sent as plain SQL afterwards (an idle tick is this one round trip
and the Python around it); elsewhere the two ORM queries. Both answers are the ones
``materialize.earliest_due()`` and ``outbox.has_publishable()`` give.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

from django.db import connection

from scheduler_app.materialize import earliest_due
from scheduler_app.models import Schedule, ScheduleStatus
from scheduler_app.outbox import Targets, has_publishable, publishable

_NOW = datetime(2000, 1, 1, 0, 0, 0, 123457, tzinfo=UTC)
"""A stand-in for ``now`` while compiling, found again among the parameters."""


@dataclass(frozen=True)
class Probe:
    due: datetime | None
    """The earliest ``next_run_at`` of an active schedule."""
    publishable: bool
    """Whether an unpublished occurrence (of the targets served) is free to publish."""


def probe(now: datetime, targets: Targets = None) -> Probe:
    """``targets``: those the caller's publisher serves (None: all), as ``has_publishable``."""
    if connection.vendor != "postgresql":
        return Probe(earliest_due(), has_publishable(now, targets))
    sql, params = _compiled(targets)
    with connection.cursor() as cursor:
        cursor.execute(sql, [now if param == _NOW else param for param in params])
        due, work = cursor.fetchone()
    return Probe(due, bool(work))


@cache
def _compiled(targets: Targets) -> tuple[str, tuple[Any, ...]]:
    """The statement and its parameters, with ``_NOW`` where ``now`` goes."""
    due_sql, due_params = (
        Schedule.objects.filter(status=ScheduleStatus.ACTIVE)
        .order_by("next_run_at")
        .values("next_run_at")[:1]
        .query.sql_with_params()
    )
    outbox_sql, outbox_params = (
        publishable(_NOW, targets).order_by().values("pk")[:1].query.sql_with_params()
    )
    sql = f"SELECT ({due_sql}), EXISTS ({outbox_sql})"
    return sql, (*due_params, *outbox_params)
