"""What a tick asks first: the earliest due instant, and whether the outbox has work.

On PostgreSQL one statement, ``SELECT (earliest next_run_at), EXISTS (publishable row)``,
compiled once by the ORM and sent afterwards with its values apart (``db.cursors``: an idle
tick is this one round trip and the Python around it); elsewhere the two ORM queries. With
``OPTIONS["prepare_threshold"]`` set, PostgreSQL prepares it as it does the worker's
statements: planning it costs more than running it (every partition of the ledger and its
partial indexes are looked at), 0.5-0.6 ms a tick at five partitions. Both answers are the ones
``claim.earliest_due()`` and ``outbox.has_publishable()`` give.

The states, status and targets are written into the text; only ``now`` is a parameter. A
prepared statement switches to a generic plan after five executions, and a generic plan cannot
use a partial index whose predicate (``state = 'pending'``) depends on a parameter: with the
states as parameters it read every row of every partition (1.3 s a tick at a few million rows,
``bench/ledger_size.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

from django.db import connection

from scheduler_app.db.cursors import Statement, constant, fetch_one, statement
from scheduler_app.dispatch.claim import earliest_due
from scheduler_app.dispatch.outbox import has_publishable, publishable
from scheduler_app.handoff.protocol import Targets
from scheduler_app.models import ScheduleRuntime, ScheduleStatus

_NOW = datetime(2000, 1, 1, 0, 0, 0, 123457, tzinfo=UTC)
"""A stand-in for ``now`` while compiling, found again among the parameters."""
_POSITIONAL = re.compile(r"%s")


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
    row = fetch_one(sql, {name: now if value == _NOW else value for name, value in params})
    due, work = row if row is not None else (None, False)
    return Probe(due, bool(work))


@cache
def _compiled(targets: Targets) -> tuple[Statement, tuple[tuple[str, Any], ...]]:
    """The statement and its named parameters, with ``_NOW`` where ``now`` goes."""
    due_sql, due_params = (
        ScheduleRuntime.objects.filter(status=ScheduleStatus.ACTIVE)
        .order_by("next_run_at")
        .values("next_run_at")[:1]
        .query.sql_with_params()
    )
    outbox_sql, outbox_params = (
        publishable(_NOW, targets).order_by().values("pk")[:1].query.sql_with_params()
    )
    sql = f"SELECT ({due_sql}), EXISTS ({outbox_sql})"
    values = iter((*due_params, *outbox_params))
    params: list[tuple[str, Any]] = []

    def place(_match: re.Match[str]) -> str:
        value = next(values)
        literal = constant(value)  # a state, a status, a target: a constant of the code
        if literal is not None:
            return literal
        params.append((f"p{len(params)}", value))
        return f"%({params[-1][0]})s"

    named = _POSITIONAL.sub(place, sql)
    return statement(named), tuple(params)
