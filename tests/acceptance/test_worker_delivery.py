"""At-least-once delivery end to end: a worker killed before the ack, a duplicated message.

The business effect goes to an idempotent sink keyed by the idempotency key (a Redis hash
written with HSETNX, see ``project/demo/e2e_tasks.py``), so the tests can tell raw
executions (may repeat) from applied effects (once per key).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django_celery_results.models import TaskResult

from scheduler_app import services
from scheduler_app.models import Occurrence, OccurrenceState
from tests.acceptance.e2e import Beat, Probe, Workers, next_second, state_of, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

LEASE = "2"
"""SCHEDULER_WORKER_LEASE for the workers: a dead worker's claim runs out in 2 s."""


def test_worker_killed_after_the_effect_before_the_ack(
    workers: Workers, beat: Beat, probe: Callable[[], Probe]
) -> None:
    """acks_late: the killed attempt's message is never acknowledged; its lease runs out, the
    reconciler puts the occurrence back in the outbox, the beat publishes it again (same task
    id), another worker runs attempt 2 with the same key, and the effect is not applied twice.
    """
    first = workers.start(concurrency=1, env={"SCHEDULER_WORKER_LEASE": LEASE})
    sink = probe()
    schedule = services.create_schedule(
        task="e2e.effect",
        kind="interval",
        rule="1h",
        anchor=next_second(),
        max_attempts=3,
        kwargs=sink.kwargs(hold_first_attempt=60),
    )
    wait_for(lambda: sink.flag("applied:1"), "the first attempt's side effect", workers)
    occurrence = Occurrence.objects.get(schedule=schedule)
    assert occurrence.state == OccurrenceState.RUNNING
    assert occurrence.attempts == 1
    first.kill()  # after the effect, before the task returns and the message is acked

    workers.start(concurrency=1, env={"SCHEDULER_WORKER_LEASE": LEASE})
    wait_for(
        lambda: state_of(occurrence.pk) == OccurrenceState.SUCCEEDED,
        "the second attempt to succeed",
        workers,
        beat=beat,
    )

    occurrence.refresh_from_db()
    assert occurrence.attempts == 2
    assert occurrence.fencing_token == 2
    runs = sink.runs()  # the killed attempt never reported its end: only the second one did
    assert [(run["attempt"], run["applied"]) for run in runs] == [(2, False)]
    assert runs[0]["idempotency_key"] == occurrence.idempotency_key
    assert sink.executions() == 2  # the body ran twice...
    assert sink.sink() == {occurrence.idempotency_key: str(occurrence.id)}  # ...the effect once
    # The result backend stores the result after the task returned (after the outcome).
    stored = wait_for(
        lambda: TaskResult.objects.filter(task_id=str(occurrence.id)).first(), "the result", workers
    )
    assert stored.status == "SUCCESS"
    assert Occurrence.objects.filter(schedule=schedule).count() == 1


def test_the_same_task_id_published_twice_runs_once(
    workers: Workers, beat: Beat, probe: Callable[[], Probe]
) -> None:
    worker = workers.start(concurrency=4)
    sink = probe()
    schedule = services.create_schedule(
        task="e2e.effect",
        kind="interval",
        rule="1h",
        anchor=next_second(),
        kwargs=sink.kwargs(seconds=1.0),
    )
    occurrence = wait_for(
        lambda: (
            Occurrence.objects.select_related("schedule_version")
            .filter(
                schedule=schedule, state__in=(OccurrenceState.DISPATCHED, OccurrenceState.RUNNING)
            )
            .first()
        ),
        "the occurrence to be published",
        workers,
        beat=beat,
    )
    # Two more messages with the same task id: a beat that crashed before marking the row
    # dispatched, and a broker redelivery. Up to four threads may claim them at once.
    beat.publisher.publish([occurrence, occurrence])

    wait_for(lambda: state_of(occurrence.pk) == OccurrenceState.SUCCEEDED, "the success", workers)
    ignored = f"[{occurrence.id}] ignored"
    wait_for(lambda: worker.log().count(ignored) == 2, "both duplicates to be consumed", workers)

    occurrence.refresh_from_db()
    assert occurrence.attempts == 1
    assert sink.executions() == 1
    assert sink.sink() == {occurrence.idempotency_key: str(occurrence.id)}
    # (each record is logged twice: by the project's handler and, formatted, by Celery's)
    assert worker.log().count(f"] duplicate delivery ignored: {occurrence.id}") == 2
    # The result backend stores the result after the task returned (after the outcome).
    stored = wait_for(
        lambda: TaskResult.objects.filter(task_id=str(occurrence.id)).first(), "the result", workers
    )
    assert stored.status == "SUCCESS"  # the ignored duplicates did not overwrite the result
