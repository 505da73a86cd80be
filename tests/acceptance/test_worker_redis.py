"""End to end: the ticker publishes to Redis, a real Celery worker process runs the task.

The worker is ``celery -A project worker`` in a subprocess (fixtures in ``conftest.py``,
helpers in ``e2e.py``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from celery import Celery
from django_celery_results.models import TaskResult

from scheduler_app import services
from scheduler_app.clock import FakeClock
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.publishing import CeleryPublisher
from scheduler_app.ticker import Ticker
from tests.acceptance.e2e import Workers, state_of, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


def test_worker_runs_the_task_with_its_context_once(
    worker: Workers, publisher_app: Celery, tmp_path: Path
) -> None:
    record = tmp_path / "executions.jsonl"
    # The beat's clock starts in the past, so that the slots it advances to are due by the
    # worker's (real) clock too: the claim refuses an occurrence before its not_before.
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=90)
    clock = FakeClock(start)
    schedule = services.create_schedule(
        clock=clock,
        task="demo.record_context",
        kind="interval",
        rule="30s",
        anchor=start - timedelta(hours=1),
        timezone="Europe/Riga",
        objective="e2e-freshness",
        kwargs={"record_to": str(record), "what": "e2e"},
    )
    ticker = Ticker(CeleryPublisher(publisher_app), clock=clock, owner="e2e-beat")
    assert schedule.next_run_at is not None
    clock.set(schedule.next_run_at + timedelta(seconds=1))
    assert ticker.tick().published == 1
    occurrence = Occurrence.objects.select_related("schedule_version").get(schedule=schedule)

    wait_for(lambda: state_of(occurrence.pk) == OccurrenceState.SUCCEEDED, "success", worker)

    # The task saw its idempotency key and the whole context, from the message headers.
    lines = record.read_text().splitlines()
    assert len(lines) == 1
    execution = json.loads(lines[0])
    seen = execution["occurrence"]
    assert execution["kwargs"] == {"what": "e2e"}
    assert seen["occurrence_id"] == str(occurrence.id)
    assert seen["idempotency_key"] == occurrence.idempotency_key
    assert seen["schedule_id"] == str(schedule.id)
    assert seen["schedule_version"] == 1
    assert datetime.fromisoformat(seen["scheduled_for"]) == occurrence.scheduled_for
    assert datetime.fromisoformat(seen["window_start"]) == occurrence.scheduled_for - timedelta(
        seconds=30
    )
    assert datetime.fromisoformat(seen["window_end"]) == occurrence.scheduled_for
    assert seen["timezone"] == "Europe/Riga"
    assert seen["trigger"] == "scheduled"
    assert seen["catch_up"] is False
    assert seen["objective"] == "e2e-freshness"
    assert seen["attempt"] == 1

    occurrence.refresh_from_db()
    assert occurrence.attempts == 1
    assert occurrence.started_at is not None and occurrence.finished_at is not None
    # The result backend stores the result after the task returned (after the outcome).
    stored = wait_for(
        lambda: TaskResult.objects.filter(task_id=str(occurrence.id)).first(), "the result", worker
    )
    assert stored.status == "SUCCESS"
    assert json.loads(stored.result)["idempotency_key"] == occurrence.idempotency_key

    # A second delivery of the same task id (republish after a crash) does nothing. The next
    # slot's occurrence, published after it on the same queue and run by the same solo
    # worker, tells us when the duplicate has been consumed.
    CeleryPublisher(publisher_app).publish([occurrence])
    clock.advance(30)
    assert ticker.tick().published == 1
    later = Occurrence.objects.exclude(pk=occurrence.pk).get(schedule=schedule)
    wait_for(lambda: state_of(later.pk) == OccurrenceState.SUCCEEDED, "the next slot", worker)

    executions = [json.loads(line)["occurrence"] for line in record.read_text().splitlines()]
    assert [e["occurrence_id"] for e in executions] == [str(occurrence.id), str(later.id)]
    assert executions[1]["window_start"] == executions[0]["scheduled_for"]
    occurrence.refresh_from_db()
    assert occurrence.state == OccurrenceState.SUCCEEDED and occurrence.attempts == 1
    # The ignored duplicate did not overwrite the stored result of the real run.
    stored.refresh_from_db()
    assert json.loads(stored.result)["occurrence_id"] == str(occurrence.id)
    assert f"duplicate delivery ignored: {occurrence.id} already_succeeded" in worker.logs()
