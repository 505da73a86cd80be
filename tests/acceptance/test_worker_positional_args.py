"""End to end with a real worker: positional args reach the task, and a message whose args
were forged runs the stored ones (the worker trusts the row, never the message)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from celery import Celery
from django_celery_results.models import TaskResult

from scheduler_app import services
from scheduler_app.clock import FakeClock
from scheduler_app.models import Occurrence, OccurrenceState, Schedule
from scheduler_app.publishing import CeleryPublisher
from scheduler_app.ticker import Ticker
from tests.acceptance.e2e import Workers, state_of, wait_for
from tests.integration.support import MemoryPublisher

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


def due_echo(clock: FakeClock, args: list[object]) -> Schedule:
    start = clock.now()
    schedule = services.create_schedule(
        clock=clock,
        task="demo.echo",
        kind="interval",
        rule="30s",
        anchor=start - timedelta(hours=1),
        args=args,
        kwargs={"mode": "e2e"},
    )
    assert schedule.next_run_at is not None
    clock.set(schedule.next_run_at + timedelta(seconds=1))
    return schedule


def result_of(occurrence: Occurrence, worker: Workers) -> object:
    wait_for(lambda: state_of(occurrence.pk) == OccurrenceState.SUCCEEDED, "success", worker)
    stored = wait_for(
        lambda: TaskResult.objects.filter(task_id=str(occurrence.id)).first(), "result", worker
    )
    return json.loads(stored.result)


def test_the_worker_calls_the_task_with_the_stored_positional_args(
    worker: Workers, publisher_app: Celery
) -> None:
    clock = FakeClock(datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=90))
    schedule = due_echo(clock, [7, "eu", {"deep": [1]}])
    ticker = Ticker(CeleryPublisher(publisher_app), clock=clock, owner="e2e-beat")
    assert ticker.tick().published == 1
    occurrence = Occurrence.objects.get(schedule=schedule)
    assert occurrence.args == [7, "eu", {"deep": [1]}]
    assert result_of(occurrence, worker) == {
        "args": [7, "eu", {"deep": [1]}],
        "kwargs": {"mode": "e2e"},
    }


def test_a_forged_message_runs_the_stored_args(worker: Workers, publisher_app: Celery) -> None:
    clock = FakeClock(datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=90))
    schedule = due_echo(clock, [1])
    # The beat hands the occurrence off (to a broker in a list), so the row is dispatched...
    assert Ticker(MemoryPublisher(), clock=clock, owner="e2e-beat").tick().published == 1
    occurrence = Occurrence.objects.select_related("schedule").get(schedule=schedule)
    # ...and someone with access to the broker sends its task id with other arguments.
    occurrence.args = ["rm -rf /", 2]
    occurrence.kwargs = {"mode": "admin"}
    CeleryPublisher(publisher_app).publish([occurrence])
    assert result_of(occurrence, worker) == {"args": [1], "kwargs": {"mode": "e2e"}}
    assert "payload_mismatch" in worker.logs() or "differ from the stored payload" in worker.logs()
