"""The issue's "done when": a beat and a worker started under ``opentelemetry-instrument``
with the console exporter emit, for every occurrence, spans in both processes that share one
trace id and carry its id; with Celery's own instrumentation and without it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scheduler_app.authoring import api
from scheduler_app.models import Occurrence, OccurrenceState
from tests.acceptance.e2e import wait_for
from tests.acceptance.otel_processes import Traced, occurrence_ids, start, trace_id

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

RUNS = 3


@pytest.fixture
def processes() -> Iterator[list[Traced]]:
    started: list[Traced] = []
    yield started
    for process in started:
        process.stop()


def logs(processes: list[Traced]) -> str:
    return "\n".join(f"----- {p.name} -----\n{p.log()}" for p in processes)


@pytest.mark.parametrize("celery_instrumentation", [True, False], ids=["with", "without"])
def test_every_occurrence_has_beat_and_worker_spans_in_one_trace(
    processes: list[Traced],
    queue: str,
    redis_url: str,
    tmp_path: Path,
    celery_instrumentation: bool,
) -> None:
    env = {} if celery_instrumentation else {"OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "celery"}
    at = datetime.now(UTC) + timedelta(seconds=1)
    for index in range(RUNS):
        api.run_once("demo.ping", at=at, key=f"traced-{index}", options={"queue": queue})
    worker = start(
        "worker",
        [
            "worker",
            "--pool=prefork",
            "--concurrency=2",
            "--loglevel=INFO",
            f"--queues={queue}",
            f"--hostname=traced-{uuid.uuid4().hex[:8]}@%h",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        tmp_path,
        redis_url,
        env,
    )
    processes.append(worker)
    beat = start(
        "beat",
        ["beat", "--loglevel=INFO", f"--schedule={tmp_path / 'celerybeat-schedule'}"],
        tmp_path,
        redis_url,
        env,
    )
    processes.append(beat)

    def done() -> bool:
        finished = Occurrence.objects.filter(state=OccurrenceState.SUCCEEDED).count()
        return finished == RUNS and len(occurrence_ids(worker.spans())) == RUNS

    wait_for(done, f"{RUNS} runs and their worker spans", timeout=90)
    wait_for(lambda: len(occurrence_ids(beat.spans())) == RUNS, "the beat's spans", timeout=30)
    if celery_instrumentation:  # Celery's own span ends (and is exported) after ours
        wait_for(
            lambda: len([s for s in worker.spans() if s["name"].startswith("run/")]) >= RUNS,
            "Celery's own spans",
            timeout=30,
        )

    in_beat, in_worker = occurrence_ids(beat.spans()), occurrence_ids(worker.spans())
    for occurrence in Occurrence.objects.all():
        expected = {occurrence.pk.int}
        assert in_beat[str(occurrence.pk)] == expected, logs(processes)
        assert in_worker[str(occurrence.pk)] == expected, logs(processes)
    names = {span["name"] for span in worker.spans()}
    assert {"scheduler.run", "scheduler.claim", "scheduler.execute"} <= names
    assert "scheduler.handoff" in {span["name"] for span in beat.spans()}
    celery_spans = [s for s in worker.spans() if s["name"].startswith("run/")]
    if celery_instrumentation:  # Celery's own span sits in the same trace, not a new one
        assert {trace_id(span) for span in celery_spans} == {
            o.pk.int for o in Occurrence.objects.all()
        }
    else:
        assert celery_spans == []
