"""The outbox: publish pending occurrences to Celery, at least once, with a stable task id.

A beat claims pending rows with a short publish lease (in a short transaction), publishes
them outside any lock, then marks them dispatched. A crash after publishing and before
marking leaves the rows pending; when the lease runs out they are published again with the
same task id, and the worker-side claim turns the second delivery into a no-op.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import DatabaseError, connection, transaction
from django.db.models import F, Q, QuerySet, Value
from django.db.models.functions import Coalesce

from scheduler_app.db.locking import update_in_order
from scheduler_app.handoff.protocol import (
    KNOWN_TARGETS,
    PartialPublish,
    Publisher,
    PublishError,
    Targets,
    UnknownTarget,
    ours,
    served_targets,
    unserved,
)
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.observability import instruments, tracing
from scheduler_app.safety.handoff import park_unpublishable, screen

logger = logging.getLogger("scheduler_app.outbox")

UNPUBLISHED = Q(state=OccurrenceState.PENDING) | Q(
    state=OccurrenceState.RETRYING, dispatched_at__isnull=True
)
"""The outbox: new occurrences, and retries whose next attempt is not published yet."""


def publishable(now: datetime, targets: Targets = None) -> QuerySet[Occurrence]:
    """Unpublished rows whose publish lease (if any) has run out, of the ``targets`` served
    (None: all)."""
    rows = Occurrence.objects.filter(UNPUBLISHED).filter(
        Q(publish_lease_until__isnull=True) | Q(publish_lease_until__lt=now)
    )
    others = unserved(targets)
    return rows.exclude(target__in=others) if others else rows


def has_publishable(now: datetime, targets: Targets = None) -> bool:
    """One cheap query, no transaction: lets an idle tick skip the claim entirely."""
    return publishable(now, targets).exists()


def has_buffered() -> bool:
    """Whether any occurrence waits in ``buffered`` (the partial index of open rows): the beat
    polls the outbox often while one does, since each run that ends releases the next."""
    return Occurrence.objects.filter(state=OccurrenceState.BUFFERED).exists()


def claim_pending(
    now: datetime, limit: int, lease: timedelta, targets: Targets = None
) -> list[Occurrence]:
    """Take up to ``limit`` pending occurrences of the ``targets`` served (None: all) that no
    other beat is publishing."""
    with transaction.atomic():
        rows = list(
            publishable(now, targets)
            .select_for_update(skip_locked=True, of=("self",))
            .order_by("created_at")
            .select_related("schedule_version", "schedule")[:limit]
        )
        if rows:
            Occurrence.objects.filter(pk__in=[row.pk for row in rows]).update(
                publish_lease_until=now + lease
            )
    return rows


def mark_dispatched(occurrences: Sequence[Occurrence], at: datetime) -> int:
    """pending -> dispatched; a retry stays ``retrying`` with its publish time recorded.

    Compare-and-set: a row another actor moved on is left alone.
    """
    if not occurrences:
        return 0
    ids = [row.pk for row in occurrences]
    if connection.vendor == "postgresql":
        marked = _mark_pending_dispatched(occurrences, at)
    else:
        marked = update_in_order(
            Occurrence.objects.filter(pk__in=ids, state=OccurrenceState.PENDING),
            state=OccurrenceState.DISPATCHED,
            dispatched_at=at,
            emitted_at=Coalesce("emitted_at", Value(at)),
            publish_lease_until=None,
            publish_count=F("publish_count") + 1,
        )
    if any(row.state == OccurrenceState.RETRYING for row in occurrences):
        marked += update_in_order(
            Occurrence.objects.filter(
                pk__in=ids, state=OccurrenceState.RETRYING, dispatched_at__isnull=True
            ),
            dispatched_at=at,
            publish_lease_until=None,
            publish_count=F("publish_count") + 1,
        )
    return marked


def _mark_pending_dispatched(occurrences: Sequence[Occurrence], at: datetime) -> int:
    """pending -> dispatched on PostgreSQL in one statement with two parameters besides the
    instant: the ids as one comma-separated text (not one adapted parameter per id) and the
    batch's range of ``scheduled_for`` (so that a table partitioned by it is searched only
    where the rows can be). The sub-select locks the rows in primary-key order, as
    ``update_in_order`` does, and re-checks the state on the newest version of a row it
    waited for.

    The sub-select runs once, as an array (``= ANY(ARRAY(...))``), and the update also names
    the ids themselves: as ``o.id IN (sub-select)`` PostgreSQL joined each row of the range
    with the locked rows again (a nested loop over both, 83 ms for a batch of 500 in one slot
    on a partition without statistics); with the ids' constant array it finds the rows by
    the primary key or a hashed filter, and checks each against the locked ones."""
    table = connection.ops.quote_name(Occurrence._meta.db_table)
    slots = [row.scheduled_for for row in occurrences]
    sql = (
        f"UPDATE {table} AS o SET state = %s, dispatched_at = %s,"
        " emitted_at = COALESCE(o.emitted_at, %s), publish_lease_until = NULL,"
        " publish_count = o.publish_count + 1"
        " WHERE o.state = %s AND o.id = ANY(string_to_array(%s, ',')::uuid[])"
        f" AND o.id = ANY(ARRAY(SELECT l.id FROM {table} AS l"
        " WHERE l.id = ANY(string_to_array(%s, ',')::uuid[])"
        " AND l.scheduled_for BETWEEN %s AND %s AND l.state = %s"
        " ORDER BY l.id FOR UPDATE OF l))"
        " AND o.scheduled_for BETWEEN %s AND %s"
    )
    pending, first, last = str(OccurrenceState.PENDING), min(slots), max(slots)
    ids = ",".join(str(row.pk) for row in occurrences)
    params: list[Any] = [
        str(OccurrenceState.DISPATCHED),
        at,
        at,
        pending,
        ids,
        ids,
        first,
        last,
        pending,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, first, last])
        return int(cursor.rowcount)


def release(occurrences: Sequence[Occurrence]) -> None:
    """Give unpublished rows back to the outbox at once (broker down: retry next tick)."""
    if occurrences:
        update_in_order(
            Occurrence.objects.filter(UNPUBLISHED, pk__in=[row.pk for row in occurrences]),
            publish_lease_until=None,
        )


@dataclass(frozen=True)
class DispatchResult:
    claimed: int
    published: int
    failed: bool


def dispatch_batch(
    now: datetime, publisher: Publisher, *, limit: int, lease: timedelta, clock_now: Any
) -> DispatchResult:
    """Claim, then hand off (screen, publish, mark). ``clock_now`` gives the dispatch time
    after publishing."""
    claimed = claim_pending(now, limit, lease, served_targets(publisher))
    if not claimed:
        return DispatchResult(0, 0, False)
    return hand_off(claimed, now, publisher, clock_now)


def hand_off(
    claimed: Sequence[Occurrence], now: datetime, publisher: Publisher, clock_now: Any
) -> DispatchResult:
    """Screen (kill switches, quotas), publish and mark rows leased to this beat: claimed
    from the outbox, or just inserted by this beat's ``materialize_batch``. Rows of a target
    that ``publisher`` does not serve are given back to the outbox untouched (not a broker
    failure): a process that serves it hands them off."""
    if not claimed:
        return DispatchResult(0, 0, False)
    targets = served_targets(publisher)
    release([row for row in claimed if not ours(row, targets)])
    rows = _screened([row for row in claimed if ours(row, targets)], now)
    if not rows:
        return DispatchResult(len(claimed), 0, False)
    with tracing.handing_off(rows) as spans:
        published, failed = _publish(rows, publisher, now)
        spans.end(published)
    dispatched_at = clock_now()
    mark_dispatched(published, dispatched_at)
    instruments.observe_handoff(published, dispatched_at)
    if len(published) < len(rows):
        published_ids = {row.pk for row in published}
        release([row for row in rows if row.pk not in published_ids])
    if failed:
        instruments.HANDOFF_FAILURES.inc(len(rows) - len(published))
    return DispatchResult(len(claimed), len(published), failed)


def _publish(
    rows: Sequence[Occurrence], publisher: Publisher, now: datetime
) -> tuple[list[Occurrence], bool]:
    """(published, whether the broker failed): the batch, or row by row when a row of it
    cannot be encoded."""
    try:
        return publisher.publish(rows), False
    except PublishError as exc:
        return _broker_failed(exc, rows), True
    except Exception as exc:  # a row the transport cannot encode, not the broker
        logger.warning(
            "batch could not be published (%s); publishing it one by one",
            f"{type(exc).__name__}: {exc}",
            extra={"action": "outbox.batch_unpublishable", "count": len(rows)},
        )
        return _one_by_one(rows, publisher, now)


def _screened(rows: Sequence[Occurrence], now: datetime) -> list[Occurrence]:
    """``screen`` for the batch; when it raises (a row whose stored values a check cannot
    read), row by row, parking the rows that raise so that the others go on. A row whose
    target is no ``HandoffTarget`` (written past the services) is parked first."""
    claimed: list[Occurrence] = []
    for row in rows:
        if row.target in KNOWN_TARGETS:
            claimed.append(row)
        else:
            park_unpublishable(row, UnknownTarget(row.target), now)
    if not claimed:
        return []
    try:
        return screen(claimed, now)
    except Exception as exc:
        if isinstance(exc, DatabaseError):
            raise
    passed: list[Occurrence] = []
    for row in claimed:
        try:
            passed.extend(screen([row], now))
        except Exception as exc:
            if isinstance(exc, DatabaseError):
                raise
            park_unpublishable(row, exc, now)
    return passed


def _broker_failed(exc: PublishError, rows: Sequence[Occurrence]) -> list[Occurrence]:
    """What was published before the broker failed (logged once)."""
    published = exc.published if isinstance(exc, PartialPublish) else []
    logger.warning(
        "broker unavailable; occurrences stay in the outbox",
        extra={"action": "outbox.publish_failed", "pending": len(rows) - len(published)},
    )
    return published


def _one_by_one(
    rows: Sequence[Occurrence], publisher: Publisher, now: datetime
) -> tuple[list[Occurrence], bool]:
    """Publish each row alone; one that raises anything but a broker failure is parked
    (``failed: unpublishable``) and the others go on; a broker failure stops here."""
    published: list[Occurrence] = []
    for index, row in enumerate(rows):
        try:
            published.extend(publisher.publish([row]))
        except PublishError as exc:
            return published + _broker_failed(exc, rows[index:]), True
        except Exception as exc:  # this row only; see the docstring
            park_unpublishable(row, exc, now)
    return published, False
