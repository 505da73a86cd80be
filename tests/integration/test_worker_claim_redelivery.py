"""A claim that meets the database down hands the delivery back to the broker for a prompt
retry (``scheduler_app.worker.redelivery``), instead of failing the task and waiting
``SCHEDULER_DISPATCH_TIMEOUT``.

Deliveries run as a worker runs them (Celery's tracer, not eagerly): the first from the
headers the beat publishes, the next from the copy the worker published (captured at
``Signature.apply_async``, turned into the headers a worker would receive).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from celery.app.trace import build_tracer
from celery.canvas import Signature
from django.db import InterfaceError, OperationalError

from project.celery import app
from scheduler_app.clock import FakeClock
from scheduler_app.conf import get_settings
from scheduler_app.dispatch.reconcile import reconcile
from scheduler_app.handoff.protocol import HEADER, context_headers
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.worker import claiming, redelivery
from tests.integration.support import START
from tests.integration.worker_support import due_one, fetch, load_task_modules

pytestmark = pytest.mark.django_db(transaction=True)  # the worker closes its connection
BODY_RUNS: list[str] = []


@app.task(name="tests.claim_counted")
def counted(**kwargs: Any) -> str:
    BODY_RUNS.append("ran")
    return "done"


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    load_task_modules()
    BODY_RUNS.clear()
    yield
    BODY_RUNS.clear()


class FailingClaim:
    """``claiming.claim`` that raises ``error`` for its first ``failures`` calls."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures, self.error, self.calls = failures, error, 0
        self.claim = claiming.claim

    def __call__(self, *args: Any, **kwargs: Any) -> claiming.Claim:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return self.claim(*args, **kwargs)


class Broker:
    """Records what the worker publishes instead of sending it."""

    def __init__(self) -> None:
        self.sent: list[Signature] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        def apply_async(signature: Signature, *args: Any, **kwargs: Any) -> None:
            self.sent.append(signature)

        monkeypatch.setattr(Signature, "apply_async", apply_async)


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> Broker:
    recorder = Broker()
    recorder.install(monkeypatch)
    return recorder


def beat_message(occurrence: Occurrence) -> dict[str, Any]:
    """The headers of the message the beat publishes for ``occurrence``."""
    return {"id": str(occurrence.pk), "retries": 0, HEADER: context_headers(occurrence)}


def copy_message(copy: Signature) -> dict[str, Any]:
    """The headers a worker receives for a copy the worker published."""
    options = copy.options
    return {"id": options["task_id"], "retries": options.get("retries", 0), **options["headers"]}


def deliver(headers: dict[str, Any], clock: FakeClock, task: Any = counted) -> Any:
    """One delivery as a worker runs it: Celery's tracer, not eager."""
    target = task._get_current_object() if hasattr(task, "_get_current_object") else task
    target.clock = clock
    request = {
        **headers,
        "delivery_info": {"exchange": "", "routing_key": "celery"},
        "is_eager": False,
    }
    try:
        tracer = build_tracer(target.name, target, app=app, eager=False, propagate=False)
        return tracer(headers["id"], (), {}, request)
    finally:
        del target.clock


def test_a_claim_that_meets_the_database_down_is_delivered_again_and_runs_once(
    monkeypatch: pytest.MonkeyPatch, broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, task="tests.claim_counted")
    claim = FailingClaim(1, OperationalError("the connection is closed"))
    monkeypatch.setattr(claiming, "claim", claim)

    with caplog.at_level(logging.WARNING, logger="scheduler_app.tasks"):
        deliver(beat_message(occurrence), clock)
    assert BODY_RUNS == []
    assert fetch(occurrence).state == OccurrenceState.DISPATCHED
    (copy,) = broker.sent
    assert copy.options["task_id"] == str(occurrence.pk)  # the same id: the same occurrence
    assert copy.options["countdown"] == redelivery.FIRST_DELAY  # promptly, not in an hour
    assert copy.options["headers"][HEADER] == context_headers(occurrence)
    assert copy.options["headers"][redelivery.CLAIM_TRIES] == 1
    (deferred,) = [
        r for r in caplog.records if getattr(r, "action", "") == "occurrence.claim_deferred"
    ]
    assert deferred.occurrence_id == str(occurrence.pk)

    clock.advance(timedelta(seconds=1))
    deliver(copy_message(copy), clock)  # the copy goes through the claim like any delivery
    assert BODY_RUNS == ["ran"]
    stored = fetch(occurrence)
    assert (stored.state, stored.attempts, claim.calls) == (OccurrenceState.SUCCEEDED, 1, 2)

    deliver(copy_message(copy), clock)  # a second copy (a broker redelivery): refused
    assert BODY_RUNS == ["ran"]
    assert len(broker.sent) == 1


def test_the_body_never_runs_while_the_claim_fails_and_the_tries_are_bounded(
    monkeypatch: pytest.MonkeyPatch, broker: Broker
) -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, task="tests.claim_counted")
    claim = FailingClaim(10_000, InterfaceError("connection already closed"))
    monkeypatch.setattr(claiming, "claim", claim)

    headers = beat_message(occurrence)
    delays = []
    for _ in range(redelivery.MAX_TRIES):
        deliver(headers, clock)
        copy = broker.sent[-1]
        delays.append(copy.options["countdown"])
        headers = copy_message(copy)
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0] + [30.0] * (redelivery.MAX_TRIES - 5)
    assert headers["retries"] == 0  # the attempt number the task sees is unchanged

    result = deliver(headers, clock)  # tries used up: the task fails, nothing published
    assert isinstance(result.retval.exception, InterfaceError)
    assert len(broker.sent) == redelivery.MAX_TRIES
    assert claim.calls == redelivery.MAX_TRIES + 1
    assert BODY_RUNS == []
    assert fetch(occurrence).state == OccurrenceState.DISPATCHED  # the dispatch timeout's now


def test_the_copy_is_not_published_when_the_claim_had_committed(
    monkeypatch: pytest.MonkeyPatch, broker: Broker
) -> None:
    """The claim committed, then its connection dropped: the copy is a refused duplicate,
    and the attempt's lease runs out for the reconciler, as for a worker that died."""
    clock = FakeClock(START)
    occurrence = due_one(clock, task="tests.claim_counted")

    real_claim = claiming.claim

    def committed_then_dropped(*args: Any, **kwargs: Any) -> claiming.Claim:
        real_claim(*args, **kwargs)
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(claiming, "claim", committed_then_dropped)
    deliver(beat_message(occurrence), clock)
    monkeypatch.undo()
    broker.install(monkeypatch)
    deliver(copy_message(broker.sent[0]), clock)
    assert BODY_RUNS == []
    assert fetch(occurrence).state == OccurrenceState.RUNNING
    clock.advance(timedelta(seconds=get_settings().WORKER_LEASE + 1))
    assert reconcile(clock.now(), retry_grace=timedelta(seconds=60)).requeued == 1


def test_an_eager_run_raises_the_error_and_publishes_nothing(
    monkeypatch: pytest.MonkeyPatch, broker: Broker
) -> None:
    """``apply()`` may run inside the caller's transaction: its error is the caller's."""
    clock = FakeClock(START)
    occurrence = due_one(clock, task="tests.claim_counted")
    monkeypatch.setattr(claiming, "claim", FailingClaim(1, OperationalError("down")))
    counted.clock = clock  # type: ignore[attr-defined]
    try:
        result = counted.apply(
            kwargs={}, task_id=str(occurrence.pk), headers={HEADER: context_headers(occurrence)}
        )
    finally:
        del counted.clock  # type: ignore[attr-defined]
    assert result.state == "FAILURE" and isinstance(result.result, OperationalError)
    assert broker.sent == [] and BODY_RUNS == []
