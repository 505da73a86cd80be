"""The result backend's row is written with the outcome (issue 39, "the worker in one
commit"): with django-celery-results on PostgreSQL a scheduled delivery is two statements, the
claim and the outcome, and the outcome's statement stores the ``TaskResult`` row too, the same
row Celery would have stored. Deliveries run as a worker runs them (Celery's tracer, not
eagerly: an eager call stores no result)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from celery import states
from celery.app.trace import build_tracer
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django_celery_results.models import TaskResult

from project.celery import app
from scheduler_app.clock import FakeClock
from scheduler_app.handoff.protocol import HEADER, context_headers
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.worker import results
from tests.integration.support import START
from tests.integration.worker_support import due_one, fetch, load_task_modules

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
FENCE: list[str] = []


@app.task(name="tests.result_row")
def returns(**kwargs: Any) -> dict[str, Any]:
    for occurrence_id in FENCE:  # another worker took the occurrence over meanwhile
        Occurrence.objects.filter(pk=occurrence_id).update(fencing_token=F("fencing_token") + 1)
    return {"sent": 3, "to": ["a@example.com"]}


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    load_task_modules()
    FENCE.clear()
    yield
    FENCE.clear()


def deliver(occurrence: Occurrence, clock: FakeClock) -> Any:
    """One delivery as a worker runs it, from the headers the beat publishes."""
    target: Any = returns
    target.clock = clock
    request = {
        "id": str(occurrence.pk),
        "retries": 0,
        HEADER: context_headers(occurrence),
        "delivery_info": {"exchange": "", "routing_key": "celery"},
        "hostname": "w1@host",
        "is_eager": False,
    }
    try:
        tracer = build_tracer(target.name, target, app=app, eager=False, propagate=False)
        return tracer(str(occurrence.pk), [], {}, request)
    finally:
        del target.clock


COMPARED = [name for name in results.COLUMNS if name != "task_id"]


def test_a_delivery_is_two_statements_and_stores_the_row_celery_would() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, task="tests.result_row")
    with CaptureQueriesContext(connection) as queries:
        deliver(occurrence, clock)
    assert fetch(occurrence).state == OccurrenceState.SUCCEEDED
    statements = [query["sql"] for query in queries.captured_queries]
    assert len(statements) == 2, statements  # the claim, and the outcome with the result row
    assert results.table() in statements[1]
    ours = TaskResult.objects.get(task_id=str(occurrence.pk))
    assert ours.status == states.SUCCESS
    assert app.AsyncResult(str(occurrence.pk)).get(timeout=1) == {
        "sent": 3,
        "to": ["a@example.com"],
    }
    # The row Celery's own backend stores for the same value, from the same kind of request.
    other = due_one(clock, task="tests.result_row", key="other")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(results, "result_row", lambda task, result: None)
        deliver(other, clock)
    theirs = TaskResult.objects.get(task_id=str(other.pk))
    assert [getattr(ours, name) for name in COMPARED] == [
        getattr(theirs, name) for name in COMPARED
    ]
    assert ours.date_done is not None


def test_an_outcome_that_lost_its_lease_leaves_the_row_to_celery() -> None:
    """The outcome did not end the attempt (another worker holds it): the statement wrote no
    row, so Celery stores it as it always did."""
    clock = FakeClock(START)
    occurrence = due_one(clock, task="tests.result_row")
    FENCE.append(str(occurrence.pk))
    deliver(occurrence, clock)
    assert fetch(occurrence).state == OccurrenceState.RUNNING  # fenced: not ours to end
    stored = TaskResult.objects.get(task_id=str(occurrence.pk))
    assert stored.status == states.SUCCESS


def test_a_task_that_ignores_its_result_stores_none() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, task="tests.result_row")
    target = returns
    target.ignore_result = True
    try:
        deliver(occurrence, clock)
    finally:
        target.ignore_result = False
    assert fetch(occurrence).state == OccurrenceState.SUCCEEDED
    assert not TaskResult.objects.filter(task_id=str(occurrence.pk)).exists()
