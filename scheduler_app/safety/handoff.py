"""What the outbox asks before publishing: kill switches and emission-time quotas.

Stopped occurrences end ``skipped`` with a reason (``kill_switch``, ``quota_per_day``,
``quota_tenant_hour``) in a compare-and-set on their outbox state, and
``occurrence_finished`` is sent for each, so metrics and receivers see them like any other end.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

from django.db import transaction

from scheduler_app import events
from scheduler_app.locking import lock_in_order
from scheduler_app.models import Occurrence, OccurrenceState, TenantQuota
from scheduler_app.safety import killswitch, quotas

logger = logging.getLogger("scheduler_app.safety")


def screen(rows: Sequence[Occurrence], now: datetime) -> list[Occurrence]:
    """The rows that may be published; the others are skipped with their reason."""
    if not rows:
        return []
    refused: dict[object, str] = {
        row.pk: killswitch.REASON for row in killswitch.stopped(rows, killswitch.switches_on())
    }
    rest = [row for row in rows if row.pk not in refused]
    if _quotas_apply(rest):
        refused.update(quotas.over_quota(rest, now))
    if refused:
        _skip(rows, refused, now)
    return [row for row in rows if row.pk not in refused]


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
                state=OccurrenceState.SKIPPED,
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
                state=OccurrenceState.SKIPPED,
                reason=refused[row.pk],
            )
