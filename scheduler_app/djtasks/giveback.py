"""A job whose claim hit a database error gives its occurrence back to the outbox.

django.tasks records such a job ``FAILED`` and never runs it again, so without this the
occurrence would wait ``dispatched`` until the reconciler's ``SCHEDULER_DISPATCH_TIMEOUT``
(1 h by default). Instead it goes back to the outbox (``pending``, or a ``retrying`` row
unpublished again) with a publish lease of ``REPUBLISH_AFTER``: the scheduler enqueues a new
job for it a few seconds later, with the same occurrence, key and attempt count.

Only when nothing has happened to it since: it is still waiting for this very job (its
``handoff_id``), and it has been published fewer than ``SCHEDULER_MAX_PUBLISHES`` times (a
database that fails every claim must not make a job a few seconds forever: the reconciler
then ends it ``failed: never_started`` after the timeout). A claim that committed before its
connection dropped left it ``running``: that is the lease's case, not this one.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from scheduler_app.conf import get_settings
from scheduler_app.errors import storable_error
from scheduler_app.models import Occurrence, OccurrenceState

REPUBLISH_AFTER = timedelta(seconds=10)
"""How long a given-back occurrence waits before the outbox publishes it again."""
REASON = "claim_failed"


def give_back(occurrence_id: str, handoff_id: str, now: datetime, error: str) -> int:
    """Put the occurrence back in the outbox if this job's claim never took it (rows moved)."""
    waiting = Occurrence.objects.filter(
        pk=occurrence_id,
        handoff_id=handoff_id,
        publish_count__lt=get_settings().MAX_PUBLISHES,
    )
    lease = now + REPUBLISH_AFTER
    moved = waiting.filter(state=OccurrenceState.DISPATCHED).update(
        state=OccurrenceState.PENDING,
        publish_lease_until=lease,
        reason=REASON,
        last_error=storable_error(error),
    )
    moved += waiting.filter(state=OccurrenceState.RETRYING, dispatched_at__isnull=False).update(
        dispatched_at=None, publish_lease_until=lease, last_error=storable_error(error)
    )
    return moved
