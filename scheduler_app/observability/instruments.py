"""The event instruments: counted in the process where the event happens.

They sit below everything that counts (the outbox, the ticker, the receivers of the scheduler's
signals) and import only the models; ``scheduler_app.monitoring.metrics`` serves them with the
state read from the database (and says who counts what, in which process).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from prometheus_client import Counter, Histogram
from prometheus_client.registry import CollectorRegistry

from scheduler_app.models import Occurrence, OccurrenceState

TENANT_LABEL = "tenant"
"""The label that ties a series to one tenant (what a tenant's staff may see)."""

LATENESS_BUCKETS = (
    0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400,
)  # fmt: skip
"""Seconds to hours: a reminder is late after seconds, a nightly batch after hours."""
BATCH_BUCKETS = (0, 1, 10, 50, 100, 500, 1000, 5000, 10000)
TICK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)

EVENTS = CollectorRegistry(auto_describe=True)
"""The event instruments' own registry (not prometheus_client's global one)."""

DISPATCH_LATENESS = Histogram(
    "scheduler_dispatch_lateness_seconds",
    "dispatched_at - scheduled_for at an occurrence's first handoff to the broker.",
    ["trigger", "lateness_class"],
    buckets=LATENESS_BUCKETS,
    registry=EVENTS,
)
START_LATENESS = Histogram(
    "scheduler_start_lateness_seconds",
    "started_at - scheduled_for of occurrences that ran, observed when they end.",
    ["trigger", "lateness_class"],
    buckets=LATENESS_BUCKETS,
    registry=EVENTS,
)
OCCURRENCES_EMITTED = Counter(
    "scheduler_occurrences_emitted",
    "Occurrences handed to the broker for the first time.",
    ["trigger", TENANT_LABEL, "task"],
    registry=EVENTS,
)
OCCURRENCES_FINISHED = Counter(
    "scheduler_occurrences_finished",
    "Occurrences that reached a final state.",
    ["state", "trigger", TENANT_LABEL, "task"],
    registry=EVENTS,
)
SKIPS = Counter(
    "scheduler_occurrences_skipped",
    "Occurrences ended skipped, by reason (overlap, shadow, kill_switch, quota_*, ...).",
    ["reason"],
    registry=EVENTS,
)
DUPLICATES_PREVENTED = Counter(
    "scheduler_duplicates_prevented",
    "Duplicates absorbed: insert_conflict (a slot's row existed), delivery (a worker refused).",
    ["kind"],
    registry=EVENTS,
)
HANDOFF_FAILURES = Counter(
    "scheduler_handoff_failures",
    "Occurrences the broker did not take (they stay in the outbox and are published again).",
    registry=EVENTS,
)
TICK_DURATION = Histogram(
    "scheduler_tick_duration_seconds",
    "Wall time of one beat tick (monotonic clock).",
    buckets=TICK_BUCKETS,
    registry=EVENTS,
)
TICK_BATCH = Histogram(
    "scheduler_tick_batch_size",
    "Occurrences created plus published by one beat tick.",
    buckets=BATCH_BUCKETS,
    registry=EVENTS,
)


def observe_handoff(occurrences: list[Occurrence], dispatched_at: datetime) -> None:
    """First handoffs only (a republish or a retry is not a new emission). Each label set is
    looked up once per batch: prometheus_client's ``labels`` costs more than what it counts."""
    lateness: defaultdict[tuple[str, str], list[float]] = defaultdict(list)
    emitted: defaultdict[tuple[str, str, str], int] = defaultdict(int)
    for row in occurrences:
        if row.emitted_at is not None or row.state != OccurrenceState.PENDING:
            continue
        lateness[row.trigger, _class_of(row)].append(seconds_late(dispatched_at, row.scheduled_for))
        emitted[row.trigger, _tenant_of(row), row.task] += 1
    for (trigger, lateness_class), seconds in lateness.items():
        histogram = DISPATCH_LATENESS.labels(trigger, lateness_class)
        for value in seconds:
            histogram.observe(value)
    for (trigger, tenant, task), count in emitted.items():
        OCCURRENCES_EMITTED.labels(trigger, tenant, task).inc(count)


def observe_finished(occurrence: Occurrence, state: str, reason: str) -> None:
    tenant = _tenant_of(occurrence)
    OCCURRENCES_FINISHED.labels(state, occurrence.trigger, tenant, occurrence.task).inc()
    if state == OccurrenceState.SKIPPED:
        SKIPS.labels(reason or "unknown").inc()
    if occurrence.started_at is not None:
        late = seconds_late(occurrence.started_at, occurrence.scheduled_for)
        START_LATENESS.labels(occurrence.trigger, _class_of(occurrence)).observe(late)


def seconds_late(at: datetime, slot: datetime) -> float:
    """How late ``at`` is for ``slot``, never below zero: ahead of the slot is on time."""
    return max((at - slot).total_seconds(), 0.0)


def _class_of(occurrence: Occurrence) -> str:
    """The schedule's lateness class, ``none`` when it has none (loaded like the tenant)."""
    return occurrence.schedule.lateness_class or "none"


def _tenant_of(occurrence: Occurrence) -> str:
    """The schedule's tenant (loaded with the occurrence by the outbox; one query else)."""
    return occurrence.schedule.tenant


TENANT_SERIES = frozenset({"scheduler_occurrences_emitted", "scheduler_occurrences_finished"})
"""The event instruments labelled by tenant: the only ones a tenant's staff are shown."""
