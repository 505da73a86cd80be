"""docs/tasks.md, "The occurrence context" and "What happens to each delivery": "a message
delivered to another task than the occurrence's is refused": acknowledged without running
(``task_mismatch``), and the occurrence is not touched. Attacked through the worker path
(``OccurrenceTask`` run as a worker runs it) with a message that carries a real occurrence's
id and header but is delivered to another schedulable task, a misrouted or forged message: that
task's body must not run, no attempt may be claimed or recorded, and the occurrence's own task
must still run it afterwards as its first attempt."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from project.celery import app
from scheduler_app.clock import FakeClock
from scheduler_app.models import OccurrenceAttempt, OccurrenceState
from tests.integration.support import START
from tests.integration.worker_support import due_one, fetch, load_task_modules, run

pytestmark = pytest.mark.django_db

CALLS: list[dict[str, Any]] = []


@app.task(name="tests.wrong_recipient")
def wrong_recipient(**kwargs: Any) -> str:
    """A schedulable task of the same app that must never run another task's occurrence."""
    CALLS.append(kwargs)
    return "ran someone else's occurrence"


@app.task(name="tests.rightful_recipient")
def rightful_recipient(**kwargs: Any) -> str:
    return "ran my own occurrence"


def test_an_occurrence_delivered_to_another_task_is_refused_and_left_for_its_own(
    caplog: pytest.LogCaptureFixture,
) -> None:
    load_task_modules()
    CALLS.clear()
    clock = FakeClock(START)
    row = due_one(clock, task="tests.rightful_recipient", kwargs={"invoice": 7})
    assert row.state == OccurrenceState.DISPATCHED
    before = (row.state, row.attempts, row.fencing_token, row.started_at)

    with caplog.at_level(logging.INFO, logger="scheduler_app"):
        misrouted = run(wrong_recipient, row, clock)

    assert misrouted.state == "IGNORED"
    assert CALLS == []  # the other task's body never ran
    after = fetch(row)
    assert (after.state, after.attempts, after.fencing_token, after.started_at) == before
    assert not OccurrenceAttempt.objects.filter(occurrence_id=row.pk).exists()
    reasons = [getattr(r, "reason", None) for r in caplog.records if hasattr(r, "action")]
    assert "task_mismatch" in reasons

    rightful = run(rightful_recipient, after, clock)
    assert rightful.state == "SUCCESS"
    assert rightful.result == "ran my own occurrence"
    done = fetch(row)
    assert (done.state, done.attempts) == (OccurrenceState.SUCCEEDED, 1)
