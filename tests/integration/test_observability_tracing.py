"""OpenTelemetry spans of an occurrence: beat and worker in one trace, retries too, the
context in the message headers, nothing without an SDK (docs/operations.md)."""

from __future__ import annotations

import json
import logging
from datetime import timedelta

import pytest
from celery import Celery
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from project.demo.tasks import ping
from scheduler_app.clock import FakeClock
from scheduler_app.handoff.protocol import HEADER
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.observability import otel, tracing
from scheduler_app.observability.logs import JsonFormatter, SchedulerLogRecord
from scheduler_app.publishing.calls import TaskCall
from scheduler_app.publishing.messages import MessageBuilder
from tests.integration.observability_support import (
    HeaderPublisher,
    deliver,
    exporter,
    named,
    of_occurrence,
    provider,
)
from tests.integration.support import START, schedule, ticker
from tests.integration.test_publishing_pipeline import occurrence as unsaved
from tests.integration.worker_support import fetch, flaky

pytestmark = pytest.mark.django_db
__all__ = ["exporter", "provider"]  # fixtures


def due(clock: FakeClock, broker: HeaderPublisher, **fields: object) -> Occurrence:
    target = schedule(clock, kind="interval", rule="60s", **fields)
    assert target.next_run_at is not None
    clock.set(target.next_run_at)
    ticker(broker, clock).tick()
    return fetch(Occurrence.objects.get(schedule=target))


def test_beat_and_worker_spans_share_the_occurrences_trace(
    exporter: InMemorySpanExporter,
) -> None:
    clock = FakeClock(START)
    broker = HeaderPublisher(clock)
    occurrence = due(clock, broker)
    headers = broker.headers[str(occurrence.pk)]
    assert headers["traceparent"].startswith(f"00-{occurrence.pk.hex}-")
    assert deliver(ping, occurrence, clock, headers).state == "SUCCESS"

    spans = exporter.get_finished_spans()
    mine = of_occurrence(spans, occurrence)
    [handoff] = named(mine, "scheduler.handoff")
    [run] = named(mine, "scheduler.run")
    assert handoff.kind == SpanKind.PRODUCER and run.kind == SpanKind.CONSUMER
    assert run.parent is not None and run.parent.span_id == handoff.context.span_id
    for span in (handoff, run):
        assert span.attributes is not None
        assert span.attributes["scheduler.occurrence_id"] == str(occurrence.pk)
        assert span.attributes["scheduler.schedule_id"] == str(occurrence.schedule_id)
        assert span.attributes["scheduler.trigger"] == "scheduled"
        assert span.attributes["scheduler.attempt"] == 1
        assert span.attributes["scheduler.scheduled_for"].startswith(
            occurrence.scheduled_for.strftime("%Y-%m-%dT%H:%M")
        )
    assert run.attributes is not None and run.attributes["scheduler.outcome"] == "succeeded"
    assert run.status.status_code == StatusCode.OK
    children = {
        span.name for span in mine if span.parent and span.parent.span_id == run.context.span_id
    }
    assert children == {"scheduler.claim", "scheduler.execute", "scheduler.outcome"}

    [batch] = named(spans, "scheduler.materialize")
    assert batch.attributes is not None
    assert batch.attributes["scheduler.occurrences_created"] == 1
    assert [link.context.trace_id for link in batch.links] == [occurrence.pk.int]
    assert [link.context.span_id for link in handoff.links] == [batch.context.span_id]


def test_a_retry_stays_in_the_occurrences_trace(exporter: InMemorySpanExporter) -> None:
    clock = FakeClock(START)
    broker = HeaderPublisher(clock)
    occurrence = due(clock, broker, task="tests.flaky", kwargs={"succeed_on": 2})
    first = deliver(flaky, occurrence, clock, broker.headers[str(occurrence.pk)])
    assert first.state == "IGNORED"  # attempt 1 failed: retrying
    retry = fetch(occurrence)
    assert retry.state == OccurrenceState.RETRYING
    clock.set(retry.not_before + timedelta(seconds=1))
    ticker(broker, clock).tick()  # the beat publishes attempt 2
    retry = fetch(occurrence)
    assert deliver(flaky, retry, clock, broker.headers[str(occurrence.pk)]).state == "SUCCESS"

    mine = of_occurrence(exporter.get_finished_spans(), occurrence)
    runs = named(mine, "scheduler.run")
    assert [span.attributes["scheduler.attempt"] for span in runs if span.attributes] == [1, 2]
    assert [span.attributes["scheduler.outcome"] for span in runs if span.attributes] == [
        "retrying",
        "succeeded",
    ]
    assert len(named(mine, "scheduler.handoff")) == 2
    assert runs[0].events and runs[0].events[0].name == "exception"


def test_a_message_without_traceparent_still_joins_the_trace(
    exporter: InMemorySpanExporter,
) -> None:
    clock = FakeClock(START)
    occurrence = due(clock, HeaderPublisher(clock))
    assert deliver(ping, occurrence, clock, {}).state == "SUCCESS"
    [run] = named(exporter.get_finished_spans(), "scheduler.run")
    assert run.context.trace_id == occurrence.pk.int


def test_a_forged_traceparent_of_another_trace_is_not_followed(
    exporter: InMemorySpanExporter,
) -> None:
    clock = FakeClock(START)
    occurrence = due(clock, HeaderPublisher(clock))
    other = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    assert deliver(ping, occurrence, clock, other).state == "SUCCESS"
    [run] = named(exporter.get_finished_spans(), "scheduler.run")
    assert run.context.trace_id == occurrence.pk.int


def test_without_an_sdk_no_span_and_no_header() -> None:
    assert not otel.configured()
    clock = FakeClock(START)
    broker = HeaderPublisher(clock)
    occurrence = due(clock, broker)
    assert set(broker.headers[str(occurrence.pk)]) == {HEADER}
    with tracing.running(str(occurrence.pk), {}) as run:
        assert run.span is None
    assert tracing.current_ids() is None


def test_log_records_carry_the_trace_and_span_ids(exporter: InMemorySpanExporter) -> None:
    make = logging.getLogRecordFactory()  # the one the app's ready() installed
    outside = make("scheduler_app.tests", logging.INFO, __file__, 1, "plain", (), None)
    assert not hasattr(outside, "trace_id")
    with tracing.tracer().start_as_current_span("inner") as span:
        inside = make("scheduler_app.tests", logging.INFO, __file__, 1, "inside", (), None)
    context = span.get_span_context()
    assert isinstance(inside, SchedulerLogRecord)
    document = json.loads(JsonFormatter().format(inside))
    assert document["trace_id"] == f"{context.trace_id:032x}"
    assert document["span_id"] == f"{context.span_id:016x}"
    assert inside.getMessage() == "inside"  # the one-line message leaves them out


def test_fill_in_messages_carry_their_own_traceparent(provider: object) -> None:
    app = Celery("trace-fill-in", broker="memory://", set_as_current=False)
    rows = [unsaved("demo.ping", {"n": index}, eta=False, expires=False) for index in range(4)]
    now = START
    with tracing.handing_off(rows) as spans, app.producer_or_acquire() as producer:
        builder = MessageBuilder(app, producer)
        assert builder.fill_in
        built = [builder.build(TaskCall.of(row, now)) for row in rows]
        spans.end(rows)
    for row, (message, _, _) in zip(rows, built, strict=True):
        assert message["headers"]["traceparent"].startswith(f"00-{row.pk.hex}-")


def test_a_refused_delivery_says_why(exporter: InMemorySpanExporter) -> None:
    clock = FakeClock(START)
    broker = HeaderPublisher(clock)
    occurrence = due(clock, broker)
    headers = broker.headers[str(occurrence.pk)]
    deliver(ping, occurrence, clock, headers)
    assert deliver(ping, occurrence, clock, headers).state == "IGNORED"  # a duplicate
    first, second = named(exporter.get_finished_spans(), "scheduler.run")
    assert second.attributes is not None
    assert second.attributes["scheduler.outcome"] == "refused"
    assert second.attributes["scheduler.reason"] == "already_succeeded"
    assert second.context.trace_id == first.context.trace_id == occurrence.pk.int
