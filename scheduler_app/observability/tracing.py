"""The spans of an occurrence's life, through the OpenTelemetry API only (docs/operations.md).

One trace per occurrence, whatever process and attempt: its trace id is the occurrence's UUID
(128 bits), under a parent span context derived from the same UUID. The beat's handoff span,
the worker's run span and every retry's spans therefore share one trace id without storing
anything, and a retry published by another beat stays in the trace. The context also travels
in the message headers (W3C ``traceparent``), so the worker's spans are children of the
handoff span that published the message, and ``opentelemetry-instrumentation-celery`` (which
reads and writes the same header) nests its own spans in the same trace.

Spans:

- ``scheduler.materialize``: one batch of due schedules (counts; links to the occurrences).
- ``scheduler.handoff``: one occurrence handed to the broker (or not: error status).
- ``scheduler.run``: one delivery on a worker, with ``scheduler.claim``, ``scheduler.execute``
  and ``scheduler.outcome`` inside it; each of them with the occurrence's ``scheduler.*``
  attributes, as the handoff span.

Without an SDK configured (``otel.configured()``) no span starts and no header is added.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from scheduler_app.observability.otel import api, configured, propagator

TRACER = "scheduler_app"
TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
TRACE_HEADERS = (TRACEPARENT, TRACESTATE)
"""The message headers the trace context travels in (W3C Trace Context)."""
MAX_LINKS = 128
"""Links a batch span keeps (the SDK's default limit)."""

OCCURRENCE_ID = "scheduler.occurrence_id"
SCHEDULE_ID = "scheduler.schedule_id"
SCHEDULED_FOR = "scheduler.scheduled_for"
TRIGGER = "scheduler.trigger"
ATTEMPT = "scheduler.attempt"
TASK = "scheduler.task"
OUTCOME = "scheduler.outcome"
REASON = "scheduler.reason"


def tracer() -> Any:
    return api.get_tracer(TRACER)


def occurrence_span_context(occurrence_id: str | uuid.UUID) -> Any:
    """The parent every span of this occurrence descends from: trace id = the UUID."""
    value = occurrence_id if isinstance(occurrence_id, uuid.UUID) else uuid.UUID(occurrence_id)
    number = value.int
    span_id = ((number >> 64) ^ number) & 0xFFFF_FFFF_FFFF_FFFF or 1
    return api.SpanContext(
        trace_id=number or 1,
        span_id=span_id,
        is_remote=True,
        trace_flags=api.TraceFlags(api.TraceFlags.SAMPLED),
    )


def occurrence_context(occurrence_id: str | uuid.UUID) -> Any:
    """An OpenTelemetry context whose current span is the occurrence's parent."""
    return api.set_span_in_context(api.NonRecordingSpan(occurrence_span_context(occurrence_id)))


def attributes(occurrence: Any, attempt: int | None = None) -> dict[str, Any]:
    """The ``scheduler.*`` attributes of an occurrence row."""
    return {
        OCCURRENCE_ID: str(occurrence.pk),
        SCHEDULE_ID: str(occurrence.schedule_id),
        SCHEDULED_FOR: _iso(occurrence.scheduled_for),
        TRIGGER: str(occurrence.trigger),
        TASK: str(occurrence.task),
        ATTEMPT: attempt if attempt is not None else (occurrence.attempts or 0) + 1,
    }


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def current_ids() -> tuple[str, str] | None:
    """(trace id, span id) in hex of the span active here, or None (for log records)."""
    if api is None:
        return None
    context = api.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


def occurrence_headers(occurrence_id: str) -> dict[str, str]:
    """W3C trace headers that place a request made for an occurrence (an event delivery) in
    its trace: under the span current here when it belongs to that trace (the delivery's
    ``scheduler.run``), else under the occurrence's parent; empty without an SDK."""
    if not configured():
        return {}
    current = api.get_current_span().get_span_context()
    return _injected(None if current.is_valid else occurrence_context(occurrence_id))


def _injected(context: Any) -> dict[str, str]:
    """The W3C trace headers of ``context`` (None: the current one)."""
    carrier: dict[str, str] = {}
    propagator.inject(carrier, context=context)
    return carrier


# -- the beat: materialize and handoff ------------------------------------------------------


class Batch:
    """The ``scheduler.materialize`` span of one batch (a no-op one without an SDK)."""

    def __init__(self, span: Any = None) -> None:
        self.span = span

    def created(self, claimed: int, created: int, fresh: Sequence[Any]) -> None:
        if self.span is None:
            return
        self.span.set_attribute("scheduler.schedules_claimed", claimed)
        self.span.set_attribute("scheduler.occurrences_created", created)
        for row in fresh[:MAX_LINKS]:
            self.span.add_link(occurrence_span_context(row.pk), {OCCURRENCE_ID: str(row.pk)})


@contextmanager
def materializing() -> Iterator[Batch]:
    """Around one batch of the beat's materialize step (and the handoff of its new rows)."""
    if not configured():
        yield Batch()
        return
    with tracer().start_as_current_span("scheduler.materialize") as span:
        yield Batch(span)


class Handoff:
    """One ``scheduler.handoff`` span per occurrence of a batch, each in its own trace."""

    def __init__(self, rows: Sequence[Any] = ()) -> None:
        self.spans: dict[str, Any] = {}
        if not rows:
            return
        current = api.get_current_span().get_span_context()
        links = [api.Link(current)] if current.is_valid else None
        start = tracer().start_span
        for row in rows:
            self.spans[str(row.pk)] = start(
                "scheduler.handoff",
                context=occurrence_context(row.pk),
                kind=api.SpanKind.PRODUCER,
                attributes=attributes(row),
                links=links,
            )

    def headers(self, occurrence_id: str) -> dict[str, str]:
        span = self.spans.get(occurrence_id)
        return {} if span is None else _injected(api.set_span_in_context(span))

    def active(self, occurrence_id: str) -> AbstractContextManager[Any]:
        span = self.spans.get(occurrence_id)
        if span is None:
            return nullcontext()
        return api.use_span(span, end_on_exit=False)

    def end(self, published: Iterable[Any]) -> None:
        """End every span: the published ones OK, the others with an error status."""
        if not self.spans:  # no tracer configured: nothing was started
            return
        done = {str(row.pk) for row in published}
        for occurrence_id, span in self.spans.items():
            if occurrence_id in done:
                span.set_status(api.Status(api.StatusCode.OK))
            else:
                span.set_status(api.Status(api.StatusCode.ERROR, "not published"))
            span.end()
        self.spans = {}


_HANDOFF: ContextVar[Handoff | None] = ContextVar("scheduler_handoff", default=None)


@contextmanager
def handing_off(rows: Sequence[Any]) -> Iterator[Handoff]:
    """Around the publication of a batch; ``Handoff.end`` records what was published (rows
    left open by an exception end with an error status)."""
    if not configured():
        yield Handoff()
        return
    handoff = Handoff(rows)
    token = _HANDOFF.set(handoff)
    try:
        yield handoff
    finally:
        _HANDOFF.reset(token)
        handoff.end(())


def message_headers(occurrence: Any) -> dict[str, str]:
    """The trace headers of this occurrence's message (empty outside a traced handoff)."""
    handoff = _HANDOFF.get()
    return handoff.headers(str(occurrence.pk)) if handoff is not None else {}


def publishing(occurrence: Any) -> AbstractContextManager[Any]:
    """Makes the occurrence's handoff span current while its message is built and sent, so
    that spans other instrumentation opens there (Celery's ``apply_async``) nest under it."""
    handoff = _HANDOFF.get()
    return handoff.active(str(occurrence.pk)) if handoff is not None else nullcontext()


# -- the worker: one delivery ---------------------------------------------------------------


class Run:
    """The ``scheduler.run`` span of one delivery (a no-op one without an SDK), and its
    children ``scheduler.claim``, ``scheduler.execute`` and ``scheduler.outcome``.

    Every span carries the occurrence's ``scheduler.*`` attributes (docs/operations.md). The
    claim span ends before the claim has told who the occurrence is (schedule, slot, trigger,
    task, attempt): it is held, with the instant it ended, until ``claimed`` (or ``refused``,
    or the end of the run) gives it what is known, then ended at that instant."""

    def __init__(self, span: Any = None, occurrence_id: str = "") -> None:
        self.span = span
        self.attributes: dict[str, Any] = {OCCURRENCE_ID: occurrence_id} if occurrence_id else {}
        self.held: list[tuple[Any, int]] = []

    def step(self, name: str) -> AbstractContextManager[Any]:
        if self.span is None:
            return nullcontext()
        return self._step(f"scheduler.{name}")

    @contextmanager
    def _step(self, name: str) -> Iterator[Any]:
        span = tracer().start_span(name, attributes=self.attributes)
        try:
            with api.use_span(span, end_on_exit=False):
                yield span
        finally:
            if SCHEDULE_ID in self.attributes:
                span.end()
            else:
                self.held.append((span, time.time_ns()))

    def release(self) -> None:
        """End the held spans with the attributes known now, at the instants they ended."""
        held, self.held = self.held, []
        for span, ended in held:
            span.set_attributes(self.attributes)
            span.end(end_time=ended)

    def claimed(self, occurrence: Any, attempt: int) -> None:
        if self.span is not None:
            self.attributes = attributes(occurrence, attempt)
            self.span.set_attributes(self.attributes)
            self.release()

    def refused(self, reason: str) -> None:
        """The claim refused the delivery (a duplicate, expired, forbidden ...): not run."""
        if self.span is not None:
            self.span.set_attributes({OUTCOME: "refused", REASON: reason})
            self.release()

    def ended(self, state: str, reason: str, error: BaseException | None = None) -> None:
        if self.span is None:
            return
        self.span.set_attribute(OUTCOME, state)
        if reason:
            self.span.set_attribute(REASON, reason)
        if error is not None:
            self.span.record_exception(error)
        if state in ("failed", "expired"):
            self.span.set_status(api.Status(api.StatusCode.ERROR, reason or state))
        elif state == "succeeded":
            self.span.set_status(api.Status(api.StatusCode.OK))


_RUN: ContextVar[Run | None] = ContextVar("scheduler_run", default=None)


def current_run() -> Run:
    return _RUN.get() or Run()


@contextmanager
def running(occurrence_id: str, carrier: Any = None) -> Iterator[Run]:
    """Around one delivery of an occurrence on a worker: the ``scheduler.run`` span, in the
    occurrence's trace (under the handoff span when the message carries its ``traceparent``,
    under Celery instrumentation's span when that is already current in the same trace)."""
    if not configured():
        yield Run()
        return
    parent, links = _parent(occurrence_id, carrier)
    with tracer().start_as_current_span(
        "scheduler.run",
        context=parent,
        kind=api.SpanKind.CONSUMER,
        attributes={OCCURRENCE_ID: occurrence_id},
        links=links,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        run = Run(span, occurrence_id)
        token = _RUN.set(run)
        try:
            yield run
        finally:
            run.release()
            _RUN.reset(token)


def _parent(occurrence_id: str, carrier: Any) -> tuple[Any, list[Any] | None]:
    """The context a run span starts in, and a link to a current span of another trace."""
    try:
        root = occurrence_span_context(occurrence_id)
    except ValueError:  # not a UUID: not ours to place
        return None, None
    current = api.get_current_span().get_span_context()
    if current.is_valid and current.trace_id == root.trace_id:
        return None, None  # already inside the occurrence's trace (Celery instrumentation)
    links = [api.Link(current)] if current.is_valid else None
    carried = api.get_current_span(propagator.extract(trace_headers(carrier)))
    carried_context = carried.get_span_context()
    if carried_context.is_valid and carried_context.trace_id == root.trace_id:
        return api.set_span_in_context(carried), links
    return api.set_span_in_context(api.NonRecordingSpan(root)), links


def trace_headers(carrier: Any) -> dict[str, str]:
    """The trace headers of a Celery request (attributes, or its ``headers`` mapping) or of
    a mapping of message headers."""
    found: dict[str, str] = {}
    nested = carrier.get("headers") if isinstance(carrier, Mapping) else None
    if nested is None:
        nested = getattr(carrier, "headers", None)
    for name in TRACE_HEADERS:
        value = carrier.get(name) if isinstance(carrier, Mapping) else getattr(carrier, name, None)
        if value is None and isinstance(nested, Mapping):
            value = nested.get(name)
        if isinstance(value, str):
            found[name] = value
    return found
