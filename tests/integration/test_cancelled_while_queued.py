"""docs/tasks.md, "Pause, cancel, delete while a run is going": "a cancelled waiting
occurrence whose message is still in the queue is refused by the worker". Attacked through the
worker path: the message was handed to the broker, then the schedule was cancelled (or paused
with ``on_pause=cancel``) before any worker took it; the worker then receives it. The task's
body must not run, and the occurrence must stay cancelled, with no attempt claimed."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_app import services
from scheduler_app.clock import FakeClock
from scheduler_app.models import OccurrenceAttempt, OccurrenceState
from tests.integration.support import START
from tests.integration.test_worker_slot import RUNS, slot_counted
from tests.integration.worker_support import due_one, fetch, load_task_modules, run

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("stop", ["cancel", "pause_on_pause_cancel"])
def test_a_message_of_an_occurrence_cancelled_while_it_waited_in_the_queue_runs_nothing(
    stop: str,
) -> None:
    load_task_modules()
    RUNS.clear()
    clock = FakeClock(START)
    fields: dict[str, Any] = {"on_pause": "cancel"} if stop != "cancel" else {}
    row = due_one(clock, task="tests.slot_counted", **fields)
    assert row.state == OccurrenceState.DISPATCHED  # its message is in the queue
    if stop == "cancel":
        services.cancel_schedule(row.schedule_id, clock=clock, reason="wrong bucket")
    else:
        services.pause_schedule(row.schedule_id, clock=clock, note="freeze")
    assert fetch(row).state == OccurrenceState.CANCELLED

    delivered = run(slot_counted, row, clock)

    assert delivered.state == "IGNORED"
    assert RUNS == []  # the body never ran
    after = fetch(row)
    assert (after.state, after.attempts) == (OccurrenceState.CANCELLED, 0)
    assert not OccurrenceAttempt.objects.filter(occurrence_id=row.pk, kind="run").exists()
