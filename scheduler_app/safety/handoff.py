"""What the outbox asks before publishing: may it run at all, kill switches, quotas.

The second line of defence behind the service layer: whatever put a row in the outbox (a
service, a bug, the ORM), only occurrences of a schedule whose status allows runs
(not cancelled, not awaiting approval) and of an approved version (when its task needs
approval) are published. Stopped occurrences end ``skipped`` with a reason
(``schedule_cancelled``, ``not_approved``, ``kill_switch``, ``quota_per_day``,
``quota_tenant_hour``) in a compare-and-set on their outbox state, and
``occurrence_finished`` is sent for each, so metrics and receivers see them like any other end.

An occurrence that cannot be published at all (its message cannot be built: a routing option
of the wrong type stored past the service layer) is *parked*: it ends ``failed`` with reason
``unpublishable`` and the error, replayable once fixed, and the rest of the batch goes on.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

from django.db import transaction

from scheduler_app import events
from scheduler_app.db.locking import lock_in_order
from scheduler_app.errors import storable_error
from scheduler_app.models import Occurrence, OccurrenceState, ScheduleStatus, TenantQuota
from scheduler_app.safety import killswitch, quotas
from scheduler_app.safety.approval import occurrence_approved

CANCELLED = "schedule_cancelled"
NOT_APPROVED = "not_approved"
NOT_ITS_VERSION = "not_its_version"
UNPUBLISHABLE = "unpublishable"

logger = logging.getLogger("scheduler_app.safety")


def screen(rows: Sequence[Occurrence], now: datetime) -> list[Occurrence]:
    """The rows that may be published; the others are skipped with their reason."""
    if not rows:
        return []
    refused = not_runnable(rows)
    refused.update(
        (row.pk, killswitch.REASON)
        for row in killswitch.stopped(rows, killswitch.switches_on())
        if row.pk not in refused
    )
    rest = [row for row in rows if row.pk not in refused]
    if _quotas_apply(rest):
        refused.update(quotas.over_quota(rest, now))
    if refused:
        _skip(rows, refused, now)
    return [row for row in rows if row.pk not in refused]


def not_runnable(rows: Sequence[Occurrence]) -> dict[object, str]:
    """Rows (loaded with their schedule and version) whose schedule may not run them now."""
    asked: dict[str, bool] = {}  # needs_approval per task name, asked once per batch
    refused: dict[object, str] = {}
    for row in rows:
        reason = why_not_runnable(row, asked)
        if reason:
            refused[row.pk] = reason
    return refused


def why_not_runnable(row: Occurrence, asked: dict[str, bool] | None = None) -> str:
    """``schedule_cancelled``, ``not_approved``, ``not_its_version``, or "" when ``row``
    (loaded with its schedule and version) may run."""
    schedule = row.schedule
    if schedule.status == ScheduleStatus.CANCELLED:
        return CANCELLED
    if schedule.status == ScheduleStatus.AWAITING_APPROVAL:
        return NOT_APPROVED
    if not matches_version(row):
        return NOT_ITS_VERSION
    return "" if occurrence_approved(row, asked) else NOT_APPROVED


def matches_version(row: Occurrence) -> bool:
    """The row runs the task and payload of the version it names (a row whose task, kwargs or
    args were changed past the services does not run under that version's approval). A stored
    definition that is no object (written past the services too) matches nothing."""
    definition = row.schedule_version.definition or {}
    if not isinstance(definition, dict):
        return False
    if "task" in definition and definition["task"] != row.task:
        return False
    if "args" in definition and definition["args"] != (row.args or []):
        return False
    return "kwargs" not in definition or definition["kwargs"] == row.kwargs


def park_unpublishable(row: Occurrence, error: Exception, now: datetime) -> bool:
    """End one row that cannot be published (``failed: unpublishable``), from the outbox."""
    message = storable_error(f"{type(error).__name__}: {error}", 2000)
    with transaction.atomic():
        ended = Occurrence.objects.filter(
            pk=row.pk, state__in=(OccurrenceState.PENDING, OccurrenceState.RETRYING)
        ).update(
            state=OccurrenceState.FAILED,
            reason=UNPUBLISHABLE,
            last_error=message,
            finished_at=now,
            publish_lease_until=None,
        )
    logger.error(
        "occurrence cannot be published; parked as failed: %s",
        message,
        extra={
            "action": "outbox.unpublishable",
            "occurrence_id": str(row.pk),
            "schedule_id": str(row.schedule_id),
        },
    )
    if ended:
        events.occurrence_finished.send(
            sender=Occurrence, occurrence=row, state=OccurrenceState.FAILED, reason=UNPUBLISHABLE
        )
    return bool(ended)


def _quotas_apply(rows: Sequence[Occurrence]) -> bool:
    return any(row.schedule.max_per_day is not None for row in rows) or (
        bool(rows) and TenantQuota.objects.exists()
    )


def _skip(rows: Sequence[Occurrence], refused: dict[object, str], now: datetime) -> None:
    by_reason: dict[str, list[object]] = defaultdict(list)
    for pk, reason in refused.items():
        by_reason[reason].append(pk)
    ended: set[object] = set()
    for reason, ids in by_reason.items():
        outbox = Occurrence.objects.filter(
            pk__in=ids, state__in=(OccurrenceState.PENDING, OccurrenceState.RETRYING)
        )
        with transaction.atomic():
            locked = lock_in_order(outbox)
            Occurrence.objects.filter(pk__in=locked).update(
                state=_ended_as(reason),
                reason=reason,
                finished_at=now,
                publish_lease_until=None,
            )
        ended.update(locked)
        logger.warning(
            "%d occurrence(s) not published: %s",
            len(ids),
            reason,
            extra={"action": f"outbox.{reason}", "count": len(ids)},
        )
    for row in rows:
        if row.pk in ended:
            events.occurrence_finished.send(
                sender=Occurrence,
                occurrence=row,
                state=_ended_as(refused[row.pk]),
                reason=refused[row.pk],
            )


def _ended_as(reason: str) -> str:
    """A cancelled schedule's rows end ``cancelled`` (as its cancel ends them); the others
    ``skipped``."""
    return OccurrenceState.CANCELLED if reason == CANCELLED else OccurrenceState.SKIPPED
