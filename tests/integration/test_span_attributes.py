"""Every span of an occurrence carries the ``scheduler.*`` attributes docs/operations.md
promises: the run's children ``scheduler.claim``, ``scheduler.execute`` and
``scheduler.outcome`` too, attempt after attempt (issue 35: they had none)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from project.demo.tasks import ping
from scheduler_app.clock import FakeClock
from scheduler_app.models import Occurrence
from tests.integration.observability_support import (
    HeaderPublisher,
    deliver,
    exporter,
    named,
    of_occurrence,
    provider,
)
from tests.integration.support import START, schedule, ticker
from tests.integration.worker_support import fetch, flaky

pytestmark = pytest.mark.django_db
__all__ = ["exporter", "provider"]  # fixtures

SPANS = ("handoff", "run", "claim", "execute", "outcome")
PROMISED = (
    "scheduler.occurrence_id",
    "scheduler.schedule_id",
    "scheduler.scheduled_for",
    "scheduler.trigger",
    "scheduler.attempt",
    "scheduler.task",
)
"""What docs/operations.md says every span of an occurrence carries."""


def due(clock: FakeClock, broker: HeaderPublisher, **fields: object) -> Occurrence:
    target = schedule(clock, kind="interval", rule="60s", **fields)
    assert target.next_run_at is not None
    clock.set(target.next_run_at)
    ticker(broker, clock).tick()
    return fetch(Occurrence.objects.get(schedule=target))


def promised(occurrence: Occurrence, attempt: int) -> dict[str, object]:
    return {
        "scheduler.occurrence_id": str(occurrence.pk),
        "scheduler.schedule_id": str(occurrence.schedule_id),
        "scheduler.scheduled_for": occurrence.scheduled_for.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "scheduler.trigger": "scheduled",
        "scheduler.attempt": attempt,
        "scheduler.task": occurrence.task,
    }


def carried(span: ReadableSpan) -> dict[str, object]:
    """The promised attributes as the span has them (None where one is missing)."""
    attributes = dict(span.attributes or {})
    return {key: attributes.get(key) for key in PROMISED}


def test_every_span_of_a_run_carries_the_promised_attributes(
    exporter: InMemorySpanExporter,
) -> None:
    clock = FakeClock(START)
    broker = HeaderPublisher(clock)
    occurrence = due(clock, broker)
    assert deliver(ping, occurrence, clock, broker.headers[str(occurrence.pk)]).state == "SUCCESS"
    mine = of_occurrence(exporter.get_finished_spans(), occurrence)
    for name in SPANS:
        [span] = named(mine, f"scheduler.{name}")
        assert carried(span) == promised(occurrence, 1), name


def test_the_claim_span_keeps_its_own_duration(exporter: InMemorySpanExporter) -> None:
    clock = FakeClock(START)
    broker = HeaderPublisher(clock)
    occurrence = due(clock, broker)
    deliver(ping, occurrence, clock, broker.headers[str(occurrence.pk)])
    mine = of_occurrence(exporter.get_finished_spans(), occurrence)
    [claim] = named(mine, "scheduler.claim")
    [execute] = named(mine, "scheduler.execute")
    assert claim.end_time is not None and execute.start_time is not None
    assert claim.end_time <= execute.start_time  # ended where the claim ended, not later


def test_a_retry_s_spans_carry_its_attempt(exporter: InMemorySpanExporter) -> None:
    clock = FakeClock(START)
    broker = HeaderPublisher(clock)
    occurrence = due(clock, broker, task="tests.flaky", kwargs={"succeed_on": 2})
    deliver(flaky, occurrence, clock, broker.headers[str(occurrence.pk)])
    retry = fetch(occurrence)
    clock.set(retry.not_before + timedelta(seconds=1))
    ticker(broker, clock).tick()
    assert deliver(flaky, fetch(occurrence), clock, broker.headers[str(occurrence.pk)]).state == (
        "SUCCESS"
    )
    mine = of_occurrence(exporter.get_finished_spans(), occurrence)
    for name in ("run", "claim", "execute", "outcome"):
        spans = named(mine, f"scheduler.{name}")
        assert [carried(span) for span in spans] == [
            promised(occurrence, 1),
            promised(occurrence, 2),
        ], name


def test_a_refused_delivery_s_claim_span_names_the_occurrence(
    exporter: InMemorySpanExporter,
) -> None:
    clock = FakeClock(START)
    broker = HeaderPublisher(clock)
    occurrence = due(clock, broker)
    headers = broker.headers[str(occurrence.pk)]
    deliver(ping, occurrence, clock, headers)
    assert deliver(ping, occurrence, clock, headers).state == "IGNORED"  # a duplicate
    claims = named(exporter.get_finished_spans(), "scheduler.claim")
    assert len(claims) == 2
    assert all(
        (span.attributes or {}).get("scheduler.occurrence_id") == str(occurrence.pk)
        for span in claims
    )
