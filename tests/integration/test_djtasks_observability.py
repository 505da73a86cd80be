"""The django.tasks worker path has what the Celery path has: spans in the occurrence's trace,
pings, Sentry Crons check-ins (docs/operations.md), outcome writes retried through a dropped
connection, and a claim that hits a database error hands the occurrence off again promptly.

run_scheduler's ticker with a fake clock, django-tasks-db's own worker in this process."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from django.db import OperationalError
from django.test import override_settings
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from scheduler_app.clock import FakeClock
from scheduler_app.djtasks import giveback
from scheduler_app.djtasks import worker as djtasks_worker
from scheduler_app.handoff import djtasks_compat as compat
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.observability import pings, sentry
from scheduler_app.safety.killswitch import set_kill_switch
from scheduler_app.worker import claiming, lifecycle
from tests.integration import djtasks_support as support
from tests.integration.observability_support import (
    PingServer,
    exporter,
    named,
    of_occurrence,
    ping_server,
    provider,
)
from tests.integration.support import rows
from tests.integration.test_djtasks_target import _reset, clock
from tests.integration.test_observability_sentry import Capturing, transport
from tests.integration.test_worker_lifecycle import Flaky

pytestmark = pytest.mark.django_db(transaction=True)  # outside a transaction, as db_worker runs
__all__ = ["_reset", "clock", "exporter", "ping_server", "provider", "transport"]  # fixtures

LOCAL = override_settings(SCHEDULER_PING_ALLOWED_HOSTS=("127.0.0.1",), SCHEDULER_PING_TIMEOUT=2)


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The worker's waits between tries of a write, recorded instead of slept."""
    waited: list[float] = []
    monkeypatch.setattr(djtasks_worker.Settings, "pause", staticmethod(waited.append))
    return waited


def handed_off(clock: FakeClock, task: str = support.PING, **fields: Any) -> Occurrence:
    """One occurrence of a new schedule, handed off by run_scheduler's ticker."""
    schedule = support.schedule(clock, task=task, **fields)
    clock.advance(1)
    assert support.loop(clock).ticker.tick().published == 1
    [occurrence] = rows(schedule)
    return occurrence


def fetch(occurrence: Occurrence) -> Occurrence:
    return Occurrence.objects.get(pk=occurrence.pk)


def sent() -> None:
    assert pings.sender.wait(10), "the ping threads did not finish"


# -- spans ----------------------------------------------------------------------------------


def test_the_run_is_a_child_of_run_schedulers_handoff_span(
    clock: FakeClock, exporter: InMemorySpanExporter
) -> None:
    occurrence = handed_off(clock)
    [job] = support.jobs()
    assert job.args_kwargs["kwargs"]["_scheduler_trace"]["traceparent"].startswith(
        f"00-{occurrence.pk.hex}-"
    )
    support.work(clock)
    assert support.RUNS[0]["kwargs"] == {}  # the trace context never reaches the body

    mine = of_occurrence(exporter.get_finished_spans(), occurrence)
    [handoff] = named(mine, "scheduler.handoff")
    [run] = named(mine, "scheduler.run")
    assert handoff.kind == SpanKind.PRODUCER and run.kind == SpanKind.CONSUMER
    assert run.parent is not None and run.parent.span_id == handoff.context.span_id
    assert run.attributes is not None
    assert run.attributes["scheduler.occurrence_id"] == str(occurrence.pk)
    assert run.attributes["scheduler.attempt"] == 1
    assert run.attributes["scheduler.outcome"] == "succeeded"
    assert run.status.status_code == StatusCode.OK
    children = [span for span in mine if span.parent and span.parent.span_id == run.context.span_id]
    assert [span.name for span in children] == [
        "scheduler.claim",
        "scheduler.execute",
        "scheduler.outcome",
    ]


def test_a_failed_run_marks_its_spans_with_the_error(
    clock: FakeClock, exporter: InMemorySpanExporter
) -> None:
    occurrence = handed_off(clock, task=support.REFUSES)
    support.work(clock)
    mine = of_occurrence(exporter.get_finished_spans(), occurrence)
    [run] = named(mine, "scheduler.run")
    [execute] = named(mine, "scheduler.execute")
    assert run.attributes is not None
    assert (run.attributes["scheduler.outcome"], run.attributes["scheduler.reason"]) == (
        "failed",
        "permanent_error",
    )
    assert run.status.status_code == StatusCode.ERROR
    assert execute.status.status_code == StatusCode.ERROR
    [event] = [event for event in execute.events if event.name == "exception"]
    assert event.attributes is not None
    assert str(event.attributes["exception.type"]).endswith("PermanentTaskError")
    assert "bad input" in str(event.attributes["exception.message"])


def test_a_refused_job_ends_its_run_span_as_refused(
    clock: FakeClock, exporter: InMemorySpanExporter
) -> None:
    occurrence = handed_off(clock)
    support.work(clock)
    [job] = support.jobs()
    job.status = "READY"  # run again by mistake
    job.save(update_fields=["status"])
    support.work(clock)
    runs = named(of_occurrence(exporter.get_finished_spans(), occurrence), "scheduler.run")
    outcomes = [span.attributes["scheduler.outcome"] for span in runs if span.attributes]
    assert outcomes == ["succeeded", "refused"]


def test_the_immediate_backend_nests_the_run_in_the_handoff(
    clock: FakeClock, exporter: InMemorySpanExporter
) -> None:
    # Django 6's own framework, or the backport's (compat.framework is whichever is installed)
    backend = f"{compat.framework.__name__}.backends.immediate.ImmediateBackend"
    immediate = {"default": {"BACKEND": backend}}
    with override_settings(TASKS=immediate):
        occurrence = handed_off(clock)
    assert fetch(occurrence).state == OccurrenceState.SUCCEEDED
    mine = of_occurrence(exporter.get_finished_spans(), occurrence)
    [handoff] = named(mine, "scheduler.handoff")
    [run] = named(mine, "scheduler.run")
    assert run.parent is not None and run.parent.span_id == handoff.context.span_id


class UnendingSpan:
    """A span context that cannot be left (as one opened in another context would be)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        raise ValueError("<Token> was created in a different Context")


def test_spans_that_cannot_be_ended_never_keep_the_outcome_from_being_written(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    occurrence = handed_off(clock)
    monkeypatch.setattr(djtasks_worker.observability, "running", lambda *a: UnendingSpan())
    step = djtasks_worker.observability.step
    monkeypatch.setattr(  # the body's span stays open across the two receivers, as the run's
        djtasks_worker.observability,
        "step",
        lambda name: UnendingSpan() if name == "execute" else step(name),
    )
    with caplog.at_level(logging.WARNING, logger="scheduler_app"):
        support.work(clock)
    assert fetch(occurrence).state == OccurrenceState.SUCCEEDED
    assert support.jobs()[0].status == "SUCCESSFUL"
    actions = [getattr(record, "action", "") for record in caplog.records]
    assert actions.count("occurrence.spans_not_ended") == 2  # the body's and the run's


# -- pings and check-ins --------------------------------------------------------------------


@LOCAL
@pytest.mark.parametrize(
    ("task", "paths"),
    [(support.PING, ["/p/start", "/p"]), (support.REFUSES, ["/p/start", "/p/fail"])],
    ids=["success", "terminal-failure"],
)
def test_what_a_job_pings(
    clock: FakeClock, ping_server: PingServer, task: str, paths: list[str]
) -> None:
    handed_off(clock, task=task, ping_url=f"{ping_server.url}/p")
    support.work(clock)
    sent()
    assert ping_server.paths == paths


@LOCAL
def test_a_retry_pings_start_again_and_fail_only_after_the_last_attempt(
    clock: FakeClock, ping_server: PingServer
) -> None:
    support.FAIL_TIMES["left"] = 5
    occurrence = handed_off(
        clock, task=support.FLAKY, max_attempts=2, retry_delay=10, ping_url=f"{ping_server.url}/p"
    )
    support.work(clock)
    sent()
    assert ping_server.paths == ["/p/start"]  # retrying: no /fail yet
    support.loop(clock).ticker.tick()
    clock.set(fetch(occurrence).not_before + timedelta(seconds=1))
    support.work(clock)
    sent()
    assert ping_server.paths == ["/p/start", "/p/start", "/p/fail"]
    assert fetch(occurrence).state == OccurrenceState.FAILED


@LOCAL
def test_a_job_stopped_by_a_kill_switch_ends_skipped_and_pings_nothing(
    clock: FakeClock, ping_server: PingServer, exporter: InMemorySpanExporter
) -> None:
    occurrence = handed_off(clock, ping_url=f"{ping_server.url}/p")
    set_kill_switch("global", enabled=True, reason="incident", now=clock.now(), by="ops")
    support.work(clock)
    sent()
    assert ping_server.paths == []
    assert support.RUNS == []
    [run] = named(of_occurrence(exporter.get_finished_spans(), occurrence), "scheduler.run")
    assert run.attributes is not None
    assert (run.attributes["scheduler.outcome"], run.attributes["scheduler.reason"]) == (
        "skipped",
        "kill_switch",
    )


@override_settings(SCHEDULER_SENTRY_CRONS=True)
@pytest.mark.parametrize(
    ("task", "statuses"),
    [(support.PING, ["in_progress", "ok"]), (support.REFUSES, ["in_progress", "error"])],
    ids=["success", "terminal-failure"],
)
def test_sentry_check_ins_per_job(
    clock: FakeClock, transport: Capturing, task: str, statuses: list[str]
) -> None:
    occurrence = handed_off(clock, task=task, key="djtasks-nightly")
    support.work(clock)
    checks = transport.check_ins()
    assert [check["status"] for check in checks] == statuses
    assert {check["check_in_id"] for check in checks} == {occurrence.pk.hex}
    assert {check["monitor_slug"] for check in checks} == {sentry.slug(occurrence.schedule)}
    assert sentry.slug(occurrence.schedule).startswith("djtasks-nightly-")


# -- outcome writes -------------------------------------------------------------------------


def test_an_outcome_write_through_a_dropped_connection_is_retried(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch, pauses: list[float]
) -> None:
    occurrence = handed_off(clock)
    finish = Flaky(lifecycle.finish, 2, OperationalError("server closed the connection"))
    monkeypatch.setattr(lifecycle, "finish", finish)
    support.work(clock)
    stored = fetch(occurrence)
    assert (stored.state, stored.attempts) == (OccurrenceState.SUCCEEDED, 1)
    assert (finish.calls, pauses) == (3, [0.5, 1.0])
    assert support.jobs()[0].status == "SUCCESSFUL"


def test_a_retry_decision_through_a_locked_database_is_retried(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch, pauses: list[float]
) -> None:
    support.FAIL_TIMES["left"] = 1
    occurrence = handed_off(clock, task=support.FLAKY, max_attempts=3)
    retry_later = Flaky(lifecycle.retry_later, 1, OperationalError("database is locked"))
    monkeypatch.setattr(lifecycle, "retry_later", retry_later)
    support.work(clock)
    stored = fetch(occurrence)
    assert (stored.state, stored.reason, retry_later.calls) == (
        OccurrenceState.RETRYING,
        "retry",
        2,
    )
    assert pauses == [0.5]


def test_an_outcome_that_cannot_be_recorded_never_raises_out_of_the_receiver(
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    pauses: list[float],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Four failures: the job keeps its own SUCCESSFUL; the run stays ``running`` until its
    lease runs out, and the reconciler then puts it back in the outbox."""
    occurrence = handed_off(clock)
    finish = Flaky(lifecycle.finish, 10, OperationalError("server closed the connection"))
    monkeypatch.setattr(lifecycle, "finish", finish)
    with caplog.at_level(logging.WARNING, logger="scheduler_app"):
        support.work(clock)
    assert (finish.calls, pauses) == (4, [0.5, 1.0, 2.0])
    assert support.jobs()[0].status == "SUCCESSFUL"
    assert fetch(occurrence).state == OccurrenceState.RUNNING
    actions = [getattr(record, "action", "") for record in caplog.records]
    assert actions.count("occurrence.record_retry") == 3
    assert "occurrence.record_failed" in actions


# -- a claim that hits the database ---------------------------------------------------------


def broken_claim(*args: object, **kwargs: object) -> claiming.Claim:
    raise OperationalError("server closed the connection unexpectedly")


def test_a_database_error_in_the_claim_hands_the_occurrence_off_again_promptly(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch, pauses: list[float]
) -> None:
    occurrence = handed_off(clock)
    monkeypatch.setattr(claiming, "claim", broken_claim)
    support.work(clock)
    monkeypatch.undo()
    [job] = support.jobs()
    assert job.status == "FAILED" and "HandoffRefused" in job.exception_class_path
    assert support.RUNS == []
    stored = fetch(occurrence)
    assert (stored.state, stored.reason) == (OccurrenceState.PENDING, giveback.REASON)
    assert "server closed the connection" in stored.last_error
    assert stored.publish_lease_until == clock.now() + giveback.REPUBLISH_AFTER

    clock.advance(giveback.REPUBLISH_AFTER - timedelta(seconds=1))
    assert support.loop(clock).ticker.tick().published == 0  # not at once: no hot loop
    clock.advance(2)
    assert support.loop(clock).ticker.tick().published == 1  # seconds later, not an hour
    support.work(clock)
    stored = fetch(occurrence)
    assert (stored.state, stored.attempts, stored.publish_count) == (
        OccurrenceState.SUCCEEDED,
        1,
        2,
    )
    assert len(support.RUNS) == 1 and stored.handoff_id != str(job.pk)
    assert pauses == []


def test_a_published_retry_whose_claim_fails_is_published_again(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    support.FAIL_TIMES["left"] = 1
    occurrence = handed_off(clock, task=support.FLAKY, max_attempts=3, retry_delay=10)
    support.work(clock)
    support.loop(clock).ticker.tick()  # the retry's job, with run_after
    clock.set(fetch(occurrence).not_before + timedelta(seconds=1))
    monkeypatch.setattr(claiming, "claim", broken_claim)
    support.work(clock)
    monkeypatch.undo()
    stored = fetch(occurrence)
    assert (stored.state, stored.dispatched_at) == (OccurrenceState.RETRYING, None)
    clock.advance(giveback.REPUBLISH_AFTER + timedelta(seconds=1))
    assert support.loop(clock).ticker.tick().published == 1
    support.work(clock)
    assert fetch(occurrence).state == OccurrenceState.SUCCEEDED
    assert [run["attempt"] for run in support.RUNS] == [1, 2]


def test_a_claim_failing_every_time_is_left_to_the_reconciler_after_max_publishes(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    occurrence = handed_off(clock)
    Occurrence.objects.filter(pk=occurrence.pk).update(publish_count=3)  # SCHEDULER_MAX_PUBLISHES
    monkeypatch.setattr(claiming, "claim", broken_claim)
    support.work(clock)
    assert fetch(occurrence).state == OccurrenceState.DISPATCHED


def test_when_the_give_back_fails_too_the_job_still_fails_cleanly(
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    pauses: list[float],
    caplog: pytest.LogCaptureFixture,
) -> None:
    occurrence = handed_off(clock)
    monkeypatch.setattr(claiming, "claim", broken_claim)
    give_back = Flaky(giveback.give_back, 10, OperationalError("the database is away"))
    monkeypatch.setattr(giveback, "give_back", give_back)
    with caplog.at_level(logging.WARNING, logger="scheduler_app"):
        support.work(clock)
    assert (give_back.calls, pauses) == (4, [0.5, 1.0, 2.0])
    assert support.jobs()[0].status == "FAILED"
    assert fetch(occurrence).state == OccurrenceState.DISPATCHED  # the reconciler's, in time
    actions = [getattr(record, "action", "") for record in caplog.records]
    assert "occurrence.give_back_failed" in actions
