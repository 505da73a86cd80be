"""End to end: the ticker publishes to Redis, a real Celery worker process runs the task.

The worker is ``celery -A project worker`` in a subprocess, on the test database (the test is
transactional, so what it writes is committed and visible to the worker) and on a queue of its
own. PostgreSQL only: pytest-django's SQLite test database lives in memory, which another
process cannot open.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery
from django.db import connection
from django_celery_results.models import TaskResult

from scheduler_app import services
from scheduler_app.clock import FakeClock
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.publishing import CeleryPublisher
from scheduler_app.ticker import Ticker

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

REPO_ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60.0


def wait_for(condition: Callable[[], Any], what: str, worker: subprocess.Popen[bytes]) -> Any:
    """Poll until ``condition()`` is truthy; fail with the worker's log on timeout."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        assert worker.poll() is None, f"the worker exited with {worker.returncode}"
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def database_url() -> str:
    """The test database pytest-django created, as a URL for the worker process."""
    db = connection.settings_dict
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"


@pytest.fixture
def queue(redis_url: str) -> Iterator[str]:
    name = f"scheduler-e2e-{uuid.uuid4().hex[:12]}"
    yield name
    redis.Redis.from_url(redis_url).delete(name)


@pytest.fixture
def worker(redis_url: str, queue: str, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": redis_url,
        "PROJECT_VAR_DIR": str(tmp_path / "var"),
    }
    log = (tmp_path / "worker.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "project",
            "worker",
            "--pool=solo",
            "--loglevel=INFO",
            f"--queues={queue}",
            f"--hostname=e2e-{queue}@%h",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=REPO_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()  # warm shutdown
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        log.close()
        connection.close()
    assert process.returncode is not None


@pytest.fixture
def publisher_app(redis_url: str, queue: str) -> Iterator[Celery]:
    """A Celery app configured like the project's, but on Redis and the test's queue."""
    app = Celery("scheduler-e2e", broker=redis_url, set_as_current=False)
    app.conf.task_default_queue = queue
    app.conf.broker_connection_retry_on_startup = True
    yield app
    app.close()


def test_worker_runs_the_task_with_its_context_once(
    worker: subprocess.Popen[bytes], publisher_app: Celery, tmp_path: Path
) -> None:
    record = tmp_path / "executions.jsonl"
    start = datetime.now(UTC).replace(microsecond=0)
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

    def state_of(pk: uuid.UUID) -> str:
        return str(Occurrence.objects.values_list("state", flat=True).get(pk=pk))

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
    stored = TaskResult.objects.get(task_id=str(occurrence.id))
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
    assert "duplicate delivery ignored" in (tmp_path / "worker.log").read_text()
