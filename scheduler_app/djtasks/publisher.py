"""The outbox's django.tasks adapter: enqueue each occurrence through its task's backend.

django-tasks-db's ``enqueue`` is a plain insert in the current transaction, so the batch's
jobs are inserted in the same transaction that marks the occurrences dispatched: either both
commit or neither does (a transactional outbox; a crash between the two leaves the rows in the
outbox and no job behind). The jobs' result ids are stored on their occurrences
(``Occurrence.handoff_id``) in that transaction too, one statement per batch, and each job's
kwargs carry its occurrence id under ``SCHEDULER_KWARG`` (and the handoff span's trace context
under ``TRACE_KWARG``), which the ``task_started`` receiver takes out again before the body
runs. A backend that runs the job inside ``enqueue`` (the ``ImmediateBackend``) starts it
before that statement: the receiver then finds the handoff in ``enqueued`` (this process,
this batch).

What Celery's message has and a django.tasks job has not, made up here: ``eta`` is
``run_after`` (held back in the outbox when the backend cannot defer); ``task_id`` =
occurrence id is the occurrence id in the kwargs plus the handoff id; revoke is ``supersede``
of the earlier job when an occurrence is handed off again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextvars import ContextVar
from datetime import datetime
from typing import Any

from django.db import DatabaseError, transaction
from django.db.models import Case, Value, When

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.db.locking import update_in_order
from scheduler_app.dispatch.outbox import mark_dispatched
from scheduler_app.djtasks import results
from scheduler_app.djtasks.errors import UnknownDjangoTask
from scheduler_app.handoff import djtasks_registry as registry
from scheduler_app.handoff.protocol import PartialPublish
from scheduler_app.models import HandoffTarget, Occurrence
from scheduler_app.observability import tracing

logger = logging.getLogger("scheduler_app.djtasks")

SCHEDULER_KWARG = "_scheduler_occurrence"
"""The keyword that carries the occurrence id in an enqueued job's kwargs (never seen by the
body: the ``task_started`` receiver replaces the kwargs with the stored payload)."""
TRACE_KWARG = "_scheduler_trace"
"""The keyword that carries the handoff span's W3C trace headers (``traceparent``), when an
OpenTelemetry SDK is configured: the worker's ``scheduler.run`` span becomes its child."""

enqueuing: ContextVar[str | None] = ContextVar("scheduler_enqueuing", default=None)
"""The occurrence this process is enqueuing right now (read by the ``task_enqueued``
receiver: a job enqueued by anyone else never names an occurrence)."""
enqueued: ContextVar[dict[str, str] | None] = ContextVar("scheduler_enqueued", default=None)
"""The batch being enqueued: occurrence id -> result id, filled by the ``task_enqueued``
receiver before a job that runs inside ``enqueue`` starts."""


def run_after_of(occurrence: Occurrence, now: datetime) -> datetime | None:
    """``not_before`` when it is a deliberate delay still ahead (jitter, a retry's backoff)."""
    not_before = occurrence.not_before
    return not_before if not_before > max(now, occurrence.scheduled_for) else None


class DjangoTasksPublisher:
    """``Publisher`` for occurrences whose target is ``django_tasks``."""

    targets = frozenset({HandoffTarget.DJANGO_TASKS.value})
    """The rows it serves (the outbox claims no others for it)."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or SystemClock()

    def publish(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        now = self.clock.now()
        batch = enqueued.set({})
        try:
            with transaction.atomic():
                published = [row for row in occurrences if self._enqueue(row, now)]
                store_handoffs(published)
                mark_dispatched(published, self.clock.now())
        except DatabaseError as exc:  # nothing of the batch committed: it stays in the outbox
            raise PartialPublish(published=[], cause=f"{type(exc).__name__}: {exc}") from exc
        finally:
            enqueued.reset(batch)
        return published

    def _enqueue(self, row: Occurrence, now: datetime) -> bool:
        """Enqueue one row's job; False when it must wait (a backend that cannot defer)."""
        task = registry.find(row.task)
        if task is None:
            raise UnknownDjangoTask(
                f"no django.tasks task {row.task!r} is importable in this process; import its "
                "module (an installed app's tasks.py is found by itself)"
            )
        run_after = run_after_of(row, now)
        if run_after is not None and not task.get_backend().supports_defer:
            return False  # its backend cannot hold it back: the outbox does until it is due
        task = task.using(**_options(row, run_after))
        earlier = row.handoff_id
        token = enqueuing.set(str(row.pk))
        try:
            with tracing.publishing(row):  # a job run inside ``enqueue`` nests its spans here
                result = task.enqueue(*_args(row), **{**row.kwargs, **_scheduler_kwargs(row)})
        finally:
            enqueuing.reset(token)
        row.handoff_id = str(result.id)
        if earlier and earlier != row.handoff_id:
            results.supersede(earlier, row.handoff_id, now)
        return True


def store_handoffs(rows: Sequence[Occurrence]) -> int:
    """``handoff_id`` of every row, in one statement (row locks in primary-key order)."""
    if not rows:
        return 0
    ids = Case(*(When(pk=row.pk, then=Value(row.handoff_id)) for row in rows))
    return update_in_order(
        Occurrence.objects.filter(pk__in=[row.pk for row in rows]), handoff_id=ids
    )


def _scheduler_kwargs(row: Occurrence) -> dict[str, Any]:
    """The occurrence id, and the handoff span's trace context when tracing is on."""
    extra: dict[str, Any] = {SCHEDULER_KWARG: str(row.pk)}
    trace = tracing.message_headers(row)
    if trace:
        extra[TRACE_KWARG] = trace
    return extra


def _options(row: Occurrence, run_after: datetime | None) -> dict[str, Any]:
    """``Task.using`` options: ``run_after``, and the schedule's queue and priority."""
    options: dict[str, Any] = {"run_after": run_after}
    routing = row.schedule.options or {}
    if isinstance(routing.get("queue"), str) and routing["queue"]:
        options["queue_name"] = routing["queue"]
    if isinstance(routing.get("priority"), int):
        options["priority"] = routing["priority"]
    return options


def _args(row: Occurrence) -> list[Any]:
    args = getattr(row, "args", None)
    return list(args) if isinstance(args, list) else []
