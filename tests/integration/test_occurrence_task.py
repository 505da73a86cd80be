"""``OccurrenceTask`` run in-process (``apply``): claim, outcome, duplicates, deadline.

The context travels in the ``scheduler`` header; run eagerly Celery exposes it only as
``request.headers["scheduler"]``, on a worker also as ``request.scheduler`` (see
tests/acceptance/test_worker_redis.py for the real worker).
"""

from __future__ import annotations

import pytest

from project.demo.tasks import ping, record_context
from scheduler_app.clock import FakeClock
from scheduler_app.context import context_from_request
from scheduler_app.handoff.protocol import HEADER, context_headers
from scheduler_app.models import Occurrence, OccurrenceState
from tests.integration.support import START, MemoryPublisher, schedule, ticker

pytestmark = pytest.mark.django_db


def due_occurrence(**fields: object) -> Occurrence:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60s", **fields)
    assert target.next_run_at is not None
    clock.set(target.next_run_at)
    ticker(MemoryPublisher(), clock).tick()
    return Occurrence.objects.select_related("schedule_version").get(schedule=target)


def run(task: object, occurrence: Occurrence) -> object:
    return task.apply(  # type: ignore[attr-defined]
        kwargs=occurrence.kwargs,
        task_id=str(occurrence.id),
        headers={HEADER: context_headers(occurrence)},
    )


def test_runs_once_and_ignores_a_second_delivery() -> None:
    occurrence = due_occurrence(task="demo.record_context", kwargs={"what": "x"}, objective="fresh")
    first = run(record_context, occurrence)
    assert first.state == "SUCCESS"
    assert first.result["idempotency_key"] == occurrence.idempotency_key
    assert first.result["objective"] == "fresh"
    occurrence.refresh_from_db()
    assert (occurrence.state, occurrence.attempts) == (OccurrenceState.SUCCEEDED, 1)

    second = run(record_context, occurrence)
    assert second.state == "IGNORED"  # acknowledged, no result overwritten
    occurrence.refresh_from_db()
    assert occurrence.state == OccurrenceState.SUCCEEDED


def test_expired_before_start_is_not_run() -> None:
    occurrence = due_occurrence(deadline=30)  # its slot is in 2026-01, long past
    result = run(ping, occurrence)
    assert result.state == "IGNORED"
    occurrence.refresh_from_db()
    assert (occurrence.state, occurrence.reason) == (OccurrenceState.EXPIRED, "deadline_passed")
    assert occurrence.started_at is None


def test_tasks_not_started_by_the_scheduler_run_unchanged() -> None:
    assert ping.apply(kwargs={"what": "manual"}).get() == "pong"
    assert record_context.apply().get() is None


def test_context_from_worker_request_attribute_and_headers() -> None:
    occurrence = due_occurrence()
    header = context_headers(occurrence)

    class WorkerRequest:  # what a Celery 5 worker builds: both forms
        scheduler = header
        headers = {HEADER: header}
        retries = 2

    class EagerRequest:
        headers = {HEADER: header}
        retries = 0

    worker = context_from_request(WorkerRequest())
    eager = context_from_request(EagerRequest())
    assert worker is not None and eager is not None
    assert worker.attempt == 3 and eager.attempt == 1
    assert worker.idempotency_key == eager.idempotency_key == occurrence.idempotency_key
    assert worker.scheduled_for == worker.window_end == occurrence.scheduled_for
