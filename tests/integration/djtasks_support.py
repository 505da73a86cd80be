"""django.tasks tasks and helpers for the django.tasks target's tests (module-level tasks:
django.tasks imports a task by its module path)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q
from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_db.models import DBTaskResult, get_date_max

from scheduler_app.clock import FakeClock
from scheduler_app.conf import SchedulerSettings
from scheduler_app.context import current_occurrence
from scheduler_app.djtasks import worker as djtasks_worker
from scheduler_app.errors import PermanentTaskError
from scheduler_app.handoff import djtasks_compat as compat
from scheduler_app.loop import SchedulerLoop
from scheduler_app.services import create_schedule
from scheduler_app.ticker import Ticker

task = compat.framework.task  # django.tasks (Django 6) or the django-tasks backport

RUNS: list[dict[str, Any]] = []
"""One entry per body run: the kwargs it got and the context it saw."""
FAIL_TIMES = {"left": 0}


def _record(kwargs: dict[str, Any]) -> dict[str, Any]:
    occurrence = current_occurrence()
    RUNS.append(
        {
            "kwargs": kwargs,
            "occurrence_id": occurrence.occurrence_id if occurrence else None,
            "key": occurrence.idempotency_key if occurrence else None,
            "attempt": occurrence.attempt if occurrence else None,
        }
    )
    return {"key": occurrence.idempotency_key if occurrence else None}


@task()
def ping(**kwargs: Any) -> dict[str, Any]:
    return _record(kwargs)


@task()
def flaky(**kwargs: Any) -> dict[str, Any]:
    result = _record(kwargs)
    if FAIL_TIMES["left"] > 0:
        FAIL_TIMES["left"] -= 1
        raise ConnectionError("the service is down")
    return result


@task()
def refuses(**kwargs: Any) -> None:
    _record(kwargs)
    raise PermanentTaskError("bad input")


PING = "tests.integration.djtasks_support.ping"
FLAKY = "tests.integration.djtasks_support.flaky"
REFUSES = "tests.integration.djtasks_support.refuses"


def reset() -> None:
    RUNS.clear()
    FAIL_TIMES["left"] = 0


def schedule(clock: FakeClock, task: str = PING, **fields: Any) -> Any:
    fields.setdefault("kind", "interval")
    fields.setdefault("rule", "60")
    fields.setdefault("overlap_policy", "allow")
    return create_schedule(clock=clock, task=task, **fields)


def loop(clock: FakeClock, owner: str = "run-scheduler", **settings: Any) -> SchedulerLoop:
    ticker = Ticker(
        SchedulerLoop(clock=clock).ticker.publisher,
        clock=clock,
        settings=SchedulerSettings(**settings),
        owner=owner,
    )
    return SchedulerLoop(clock=clock, ticker=ticker)


def work(clock: FakeClock, max_tasks: int | None = None) -> int:
    """Run django-tasks-db's own worker until no job is ready by the fake clock (the worker
    reads the wall clock for ``run_after``: jobs not due yet by ``clock`` are held meanwhile)."""
    later = Q(run_after__gt=clock.now()) & ~Q(run_after=get_date_max())
    held = dict(DBTaskResult.objects.filter(later, status="READY").values_list("id", "run_after"))
    DBTaskResult.objects.filter(pk__in=held).update(run_after=get_date_max() - timedelta(days=1))
    djtasks_worker.Settings.clock = clock
    before = DBTaskResult.objects.exclude(status="READY").count()
    Worker(
        queue_names=["default"],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=max_tasks,
        worker_id="test-worker",
        excluded_queue_names=[],
    ).run()
    for pk, run_after in held.items():
        DBTaskResult.objects.filter(pk=pk).update(run_after=run_after)
    return DBTaskResult.objects.exclude(status="READY").count() - before


def jobs() -> list[DBTaskResult]:
    return list(DBTaskResult.objects.order_by("enqueued_at", "id"))


def at(clock: FakeClock, instant: datetime) -> None:
    clock.set(instant)
