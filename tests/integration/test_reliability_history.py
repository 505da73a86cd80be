"""The attempt history and the operator notes: every attempt, lost attempt and replay is a row;
pause and resume say who and why."""

from __future__ import annotations

from datetime import timedelta

import pytest

from scheduler_app.clock import FakeClock
from scheduler_app.dispatch.reconcile import reconcile
from scheduler_app.models import OccurrenceAttempt, OccurrenceState
from scheduler_app.services import pause_schedule, replay_occurrence, resume_schedule
from scheduler_app.worker import claiming
from tests.integration.support import START, MemoryPublisher, reload, schedule, ticker
from tests.integration.worker_support import due_one, fetch, flaky, rate_limited, run

pytestmark = pytest.mark.django_db
LEASE = timedelta(seconds=60)


def history(occurrence: object) -> list[tuple[str, int, str]]:
    rows = OccurrenceAttempt.objects.filter(occurrence=occurrence).order_by("started_at", "pk")
    return [(row.kind, row.number, row.outcome) for row in rows]


def test_retries_a_lost_worker_and_a_replay_each_leave_a_row() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    occurrence = due_one(
        clock, broker, task="tests.flaky", kwargs={"succeed_on": 9}, max_attempts=3
    )
    run(flaky, occurrence, clock)  # attempt 1 fails: retrying
    clock.set(fetch(occurrence).not_before)
    claiming.claim(occurrence.pk, owner="doomed", now=clock.now(), lease=LEASE)  # attempt 2
    clock.advance(LEASE * 2)
    reconcile(clock.now(), retry_grace=LEASE)  # its worker died: back to the outbox
    run(flaky, fetch(occurrence), clock)  # attempt 3 fails: retries exhausted
    assert fetch(occurrence).state == OccurrenceState.FAILED

    clock.advance(timedelta(minutes=5))
    replay_occurrence(occurrence.pk, clock=clock, by="ops-ann", note="upstream fixed")
    assert history(occurrence) == [
        ("run", 1, "retrying"),
        ("run", 2, "lost"),
        ("run", 3, "failed"),
        ("replay", 3, "failed"),
    ]
    replay = OccurrenceAttempt.objects.get(occurrence=occurrence, kind="replay")
    assert (replay.by, replay.note, replay.started_at) == ("ops-ann", "upstream fixed", clock.now())
    lost = OccurrenceAttempt.objects.get(occurrence=occurrence, number=2)
    assert (lost.worker, lost.finished_at) == ("doomed", clock.now() - timedelta(minutes=5))


def test_a_failed_attempt_records_its_error() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, task="tests.rate_limited", max_attempts=1)
    run(rate_limited, occurrence, clock)
    [attempt] = OccurrenceAttempt.objects.filter(occurrence=occurrence)
    assert attempt.outcome == "failed"
    assert attempt.error == "TooManyRequests: 429 Too Many Requests"


def test_pause_and_resume_record_who_and_why() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60s")
    pause_schedule(target.pk, clock=clock, note="vendor outage", by="ann")
    stored = reload(target)
    assert (stored.status, stored.pause_note, stored.paused_by) == (
        "paused",
        "vendor outage",
        "ann",
    )
    resume_schedule(target.pk, clock=clock, note="vendor back", by="bob")
    stored = reload(target)
    assert (stored.status, stored.pause_note, stored.paused_by) == ("active", "vendor back", "bob")
    ticker(MemoryPublisher(), clock).tick()
