"""The reconciler never overwrites a result a worker recorded in the meantime.

Attacked (docs/operations.md, the reconciler: "every move is a compare-and-set on the
occurrence's state (and fencing token)"): the reconciler reads a run whose lease ran out, and
before it moves the row, the slow worker records its outcome, or another beat's reconciler has
already handed the run to a new worker. Moving the row anyway would lose a recorded result or
start the body a second time while the newer attempt runs.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from scheduler_app.clock import FakeClock
from scheduler_app.dispatch import reconcile as reconcile_module
from scheduler_app.dispatch.reconcile import ReconcileReport, reconcile
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.worker import claiming, lifecycle
from tests.integration.support import START
from tests.integration.worker_support import due_one, fetch

pytestmark = pytest.mark.django_db
LEASE = timedelta(seconds=30)
GRACE = timedelta(seconds=60)


def between_read_and_move(monkeypatch: pytest.MonkeyPatch, meanwhile: Any) -> None:
    """Run ``meanwhile(occurrence, now)`` after the reconciler read a lost run, before it moves
    it (what another process can do in between: nothing locks the row while it is read)."""
    original = reconcile_module._lost_worker

    def racing(occurrence: Occurrence, now: datetime) -> tuple[int, int]:
        meanwhile(occurrence, now)
        return original(occurrence, now)

    monkeypatch.setattr(reconcile_module, "_lost_worker", racing)


@pytest.mark.parametrize("max_attempts", [3, 1], ids=["would-retry", "would-fail-lost"])
def test_a_success_recorded_while_the_reconciler_looks_is_kept(
    monkeypatch: pytest.MonkeyPatch, max_attempts: int
) -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, max_attempts=max_attempts)
    slow = claiming.claim(occurrence.pk, owner="slow", now=clock.now(), lease=LEASE)
    clock.advance(LEASE + timedelta(seconds=1))  # it stopped heartbeating, then finishes late

    def the_worker_finishes(row: Occurrence, now: datetime) -> None:
        assert lifecycle.finish(
            row.pk, token=slow.token, state=OccurrenceState.SUCCEEDED, reason="", now=now
        )

    between_read_and_move(monkeypatch, the_worker_finishes)
    assert reconcile(clock.now(), retry_grace=GRACE) == ReconcileReport()
    row = fetch(occurrence)
    assert (row.state, row.reason, row.attempts) == (OccurrenceState.SUCCEEDED, "", 1)


def test_a_run_another_reconciler_handed_to_a_new_worker_is_not_taken_from_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, max_attempts=3)
    claiming.claim(occurrence.pk, owner="killed", now=clock.now(), lease=LEASE)
    clock.advance(LEASE + timedelta(seconds=1))
    original = reconcile_module._lost_worker

    def another_beat_requeues_and_a_worker_claims(row: Occurrence, now: datetime) -> None:
        assert original(Occurrence.objects.get(pk=row.pk), now) == (0, 1)
        # The outbox hands it off again; a new worker claims it: attempt 2, token 2.
        Occurrence.objects.filter(pk=row.pk).update(publish_lease_until=now + LEASE)
        assert claiming.claim(row.pk, owner="new", now=now, lease=LEASE).token == 2

    between_read_and_move(monkeypatch, another_beat_requeues_and_a_worker_claims)
    assert reconcile(clock.now(), retry_grace=GRACE).requeued == 0
    row = fetch(occurrence)
    assert (row.state, row.lease_owner, row.fencing_token, row.attempts) == (
        OccurrenceState.RUNNING,
        "new",
        2,
        2,
    )
