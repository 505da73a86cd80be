"""The outbox's adapter for events: handing an event occurrence off is marking it
``dispatched`` in the ledger, which is the delivery processes' queue (``delivery.due``).

The outbox screens the rows first (kill switches, quotas), as for every target. A first
attempt held back on purpose (jitter) stays in the outbox until its time, as django.tasks'
rows do where the backend cannot defer: a ``dispatched`` row that waits longer than
``SCHEDULER_DISPATCH_TIMEOUT`` would be taken for a lost message. A retry is handed off at
once and waits ``retrying`` until its time.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.models import HandoffTarget, Occurrence, OccurrenceState
from scheduler_app.worker.claiming import EARLY


class EventPublisher:
    """``Publisher`` for occurrences whose target is ``event``."""

    targets = frozenset({HandoffTarget.EVENT.value})

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or SystemClock()

    def publish(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        due = self.clock.now() + EARLY
        return [
            row
            for row in occurrences
            if row.state == OccurrenceState.RETRYING or row.not_before <= due
        ]
