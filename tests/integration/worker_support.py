"""Test-only tasks and helpers for the worker-side integration tests.

The tasks are registered with the project's Celery app (``task_cls`` = ``OccurrenceTask``)
under ``tests.*`` names and run in-process with ``apply``: no broker, no worker. Each test
passes its ``FakeClock`` to ``run``; the task's clock is restored afterwards.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from celery.result import EagerResult
from django.core.exceptions import ValidationError

from project.celery import app
from scheduler_app.clock import FakeClock
from scheduler_app.context import current_occurrence
from scheduler_app.handoff.protocol import HEADER, context_headers
from scheduler_app.models import Occurrence, OccurrenceState, Schedule, ScheduleVersion
from scheduler_app.tasks import check_cancelled
from tests.integration.support import MemoryPublisher, schedule, ticker


class TooManyRequests(Exception):
    """A simulated HTTP 429 from a remote API: transient, worth retrying."""


class QuotaGone(Exception):
    """Declared permanent by ``tests.declared_permanent``."""


@app.task(name="tests.rate_limited")
def rate_limited(**kwargs: Any) -> None:
    raise TooManyRequests("429 Too Many Requests")


@app.task(name="tests.flaky")
def flaky(succeed_on: int = 2, **kwargs: Any) -> int:
    """Fails with a 429 until attempt ``succeed_on``; returns the attempt it succeeded on."""
    context = current_occurrence()
    attempt = context.attempt if context is not None else 0
    if attempt < succeed_on:
        raise TooManyRequests(f"429 on attempt {attempt}")
    return attempt


@app.task(name="tests.invalid")
def invalid(**kwargs: Any) -> None:
    raise ValidationError("the report period is malformed", code="invalid")


@app.task(name="tests.declared_permanent", permanent_exceptions=(QuotaGone,))
def declared_permanent(**kwargs: Any) -> None:
    raise QuotaGone("the API key was revoked")


@app.task(name="tests.cancellable")
def cancellable(**kwargs: Any) -> str:
    check_cancelled()
    return "done"


@app.task(name="tests.asked_to_stop_midway")
def asked_to_stop_midway(**kwargs: Any) -> str:
    """Is asked to stop while it runs (as ``cancel_previous`` does from the beat), then checks."""
    context = current_occurrence()
    assert context is not None
    Occurrence.objects.filter(pk=context.occurrence_id).update(
        cancel_requested_at=context.scheduled_for
    )
    check_cancelled()
    return "not stopped"


@app.task(name="tests.context", bind=True)
def context_task(self: Any, at: str = "", **kwargs: Any) -> dict[str, Any]:
    """What the task sees: ``current_occurrence()``, ``self.occurrence`` and the time left."""
    context = current_occurrence()
    assert context is not None and self.occurrence == context
    now = datetime.fromisoformat(at) if at else None
    return {"context": context, "remaining": context.remaining(now)}


def load_task_modules() -> None:
    """Let the Celery app import its task modules now. The first time it does, Celery's Django
    fixup runs ``django.setup()`` again, and with it the logging configuration, which drops
    pytest's log capture: a test that asserts on logs calls this before capturing them."""
    from scheduler_app.handoff.allowlist import registered_tasks

    registered_tasks()


def run(
    task: Any, occurrence: Occurrence, clock: FakeClock, *, forged: bool = False, **extra: Any
) -> EagerResult:
    """Deliver ``occurrence`` to ``task`` in-process, as a worker would, at ``clock``'s time.

    As the outbox hands it off: a ``pending`` row (as passed) is leased to a beat first, unless
    ``forged`` (a message that did not come from the outbox). ``extra`` is added to the
    occurrence's stored kwargs and its version's (for test tasks that take arguments): the
    worker runs the stored payload, never the message's.
    """
    if extra:
        payload = {**occurrence.kwargs, **extra}
        Occurrence.objects.filter(pk=occurrence.pk).update(kwargs=payload)
        version = ScheduleVersion.objects.get(pk=occurrence.schedule_version_id)
        version.definition = {**version.definition, "kwargs": payload}
        version.save(update_fields=["definition"])
    if not forged and occurrence.state == OccurrenceState.PENDING:
        Occurrence.objects.filter(
            pk=occurrence.pk, state=OccurrenceState.PENDING, publish_lease_until__isnull=True
        ).update(publish_lease_until=clock.now() + timedelta(seconds=30))
    target = task._get_current_object() if hasattr(task, "_get_current_object") else task
    target.clock = clock
    try:
        result: EagerResult = task.apply(
            kwargs={**occurrence.kwargs, **extra},
            task_id=str(occurrence.id),
            headers={HEADER: context_headers(occurrence)},
        )
    finally:
        del target.clock  # back to the class's SystemClock
    return result


def due_one(clock: FakeClock, broker: MemoryPublisher | None = None, **fields: Any) -> Occurrence:
    """Create an every-minute schedule, tick at its first slot, return its dispatched row."""
    target = schedule(clock, kind="interval", rule="60s", **fields)
    assert target.next_run_at is not None
    clock.set(target.next_run_at)
    ticker(broker or MemoryPublisher(), clock).tick()
    return fetch(Occurrence.objects.get(schedule=target))


def fetch(occurrence: Occurrence) -> Occurrence:
    """The occurrence as stored now, with what ``context_headers`` needs."""
    return Occurrence.objects.select_related("schedule_version", "schedule").get(pk=occurrence.pk)


def schedule_of(occurrence: Occurrence) -> Schedule:
    return Schedule.objects.get(pk=occurrence.schedule_id)


def tenant_not_blocked(target: Schedule) -> bool:
    """A custom ``SCHEDULER_PERMISSION_CHECK``: schedules of a blocked tenant may not run."""
    return target.tenant != "blocked"
