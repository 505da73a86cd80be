"""A django.tasks job enqueued by hand for an occurrence is refused: it never runs the body.

Attacked (docs/django-tasks.md, the adapter table: "a job enqueued by hand with it
[``_scheduler_occurrence``] and a wrong result id is refused"): anyone who can call
``task.enqueue`` names a scheduled occurrence in the reserved keyword, as the scheduler does,
hoping db_worker takes their job for the occurrence's run (with their arguments, before its
time, or as a second run). Only the job the outbox handed off may claim the occurrence.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django_tasks_db.models import DBTaskResult

from scheduler_app.clock import FakeClock
from scheduler_app.djtasks.publisher import SCHEDULER_KWARG
from scheduler_app.models import OccurrenceState
from tests.integration import djtasks_support as support
from tests.integration.support import START, rows

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _reset() -> None:
    support.reset()


def test_a_job_enqueued_by_hand_for_a_dispatched_occurrence_does_not_run_it() -> None:
    clock = FakeClock(START)
    schedule = support.schedule(clock, kwargs={"n": 1})
    clock.advance(1)
    assert support.loop(clock).ticker.tick().published == 1
    [occurrence] = rows(schedule)
    # The real job waits (its worker is busy elsewhere); the forged one is taken first.
    DBTaskResult.objects.filter(pk=occurrence.handoff_id).update(
        run_after=clock.now() + timedelta(hours=1)
    )
    forged = support.ping.enqueue(**{SCHEDULER_KWARG: str(occurrence.pk)}, n=666)

    assert support.work(clock) == 1
    assert support.RUNS == []  # the body never ran, not with the stored payload either
    row = DBTaskResult.objects.get(pk=forged.id)
    assert (row.status, "HandoffRefused" in row.exception_class_path) == ("FAILED", True)
    occurrence.refresh_from_db()
    assert (occurrence.state, occurrence.attempts) == (OccurrenceState.DISPATCHED, 0)

    clock.advance(timedelta(hours=1))  # the handed-off job runs the slot, once
    assert support.work(clock) == 1
    assert [run["kwargs"] for run in support.RUNS] == [{"n": 1}]
    occurrence.refresh_from_db()
    assert (occurrence.state, occurrence.attempts) == (OccurrenceState.SUCCEEDED, 1)
