"""Prometheus metrics: state read from the database at scrape time, events counted as they happen.

Two sources, one exposition:

- ``SchedulerCollector`` reads the database when scraped (schedules, backlog, dead letters,
  overdue schedules, beats alive, clock skew ...): every process that serves metrics agrees.
- The event instruments below (lateness histograms, occurrence counters, duplicates, handoff
  failures, tick duration) count in the process where the event happens: the beat (handoffs,
  ticks) and the workers (outcomes). With ``PROMETHEUS_MULTIPROC_DIR`` set (prefork workers,
  several web processes) every process writes them to that directory and ``build_registry``
  serves the sum over all of them; without it each process serves its own.

Serve them from the beat (``SCHEDULER_METRICS_PORT``) and from the Django view
``scheduler_app.monitoring.views.metrics`` (staff users or ``SCHEDULER_METRICS_TOKEN``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Count, Max, Min, QuerySet, Sum
from prometheus_client import Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.conf import get_settings
from scheduler_app.models import (
    OPEN_STATES,
    BeatHeartbeat,
    KillSwitch,
    KillSwitchScope,
    Occurrence,
    OccurrenceState,
    Schedule,
    ScheduleHealth,
    ScheduleStatus,
)

logger = logging.getLogger("scheduler_app.metrics")

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
    ["trigger", "tenant", "task"],
    registry=EVENTS,
)
OCCURRENCES_FINISHED = Counter(
    "scheduler_occurrences_finished",
    "Occurrences that reached a final state.",
    ["state", "trigger", "tenant", "task"],
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
    """First handoffs only (a republish or a retry is not a new emission)."""
    for row in occurrences:
        if row.emitted_at is not None or row.state != OccurrenceState.PENDING:
            continue
        tenant = _tenant_of(row)
        DISPATCH_LATENESS.labels(row.trigger, _class_of(row)).observe(
            max((dispatched_at - row.scheduled_for).total_seconds(), 0.0)
        )
        OCCURRENCES_EMITTED.labels(row.trigger, tenant, row.task).inc()


def observe_finished(occurrence: Occurrence, state: str, reason: str) -> None:
    tenant = _tenant_of(occurrence)
    OCCURRENCES_FINISHED.labels(state, occurrence.trigger, tenant, occurrence.task).inc()
    if state == OccurrenceState.SKIPPED:
        SKIPS.labels(reason or "unknown").inc()
    if occurrence.started_at is not None:
        START_LATENESS.labels(occurrence.trigger, _class_of(occurrence)).observe(
            max((occurrence.started_at - occurrence.scheduled_for).total_seconds(), 0.0)
        )


def _class_of(occurrence: Occurrence) -> str:
    """The schedule's lateness class, ``none`` when it has none (loaded like the tenant)."""
    return occurrence.schedule.lateness_class or "none"


def _tenant_of(occurrence: Occurrence) -> str:
    """The schedule's tenant (loaded with the occurrence by the outbox; one query else)."""
    return occurrence.schedule.tenant


class SchedulerCollector(Collector):
    """State read from the database at scrape time (a few indexed or aggregate queries)."""

    def __init__(self, clock: Clock | None = None, *, own_thread: bool = False) -> None:
        self.clock = clock or SystemClock()
        self.own_thread = own_thread

    def collect(self) -> Iterator[Metric]:
        try:
            yield from self._collect()
        finally:
            if self.own_thread:  # the beat's HTTP thread: no connection left open between scrapes
                connection.close()

    def _collect(self) -> Iterator[Metric]:
        now = self.clock.now()
        yield self._schedules()
        yield self._active_by_tenant()
        yield self._health(now)
        yield self._invalid_rules()
        yield self._open_occurrences()
        yield self._dead_letters()
        yield from self._outbox(now)
        yield from self._counters()
        yield from self._beats(now)
        yield self._kill_switches()
        yield self._due_lag(now)

    def _schedules(self) -> Metric:
        return _by_label(
            "scheduler_schedules",
            "Schedules by status.",
            "status",
            Schedule.objects.values_list("status"),
            ScheduleStatus.values,
        )

    def _active_by_tenant(self) -> Metric:
        gauge = GaugeMetricFamily(
            "scheduler_active_schedules",
            "Active schedules by tenant and kind of rule.",
            labels=["tenant", "kind"],
        )
        rows = (
            Schedule.objects.filter(status=ScheduleStatus.ACTIVE)
            .values_list("tenant", "kind")
            .annotate(n=Count("id"))
        )
        for tenant, kind, count in rows:
            gauge.add_metric([tenant, kind], count)
        return gauge

    def _health(self, now: datetime) -> Metric:
        from scheduler_app.monitoring.monitor import overdue_count

        gauge = GaugeMetricFamily(
            "scheduler_unhealthy_schedules",
            "Active schedules with a problem: overdue (counted now: next run later than "
            "max_lateness + margin) or no_success (no success within expected_every, as of "
            "the monitor's last pass).",
            labels=["problem"],
        )
        gauge.add_metric(["overdue"], overdue_count(now))
        missing = Schedule.objects.filter(
            health=ScheduleHealth.UNHEALTHY, health_reason__contains="no successful run"
        ).count()
        gauge.add_metric(["no_success"], missing)
        return gauge

    def _invalid_rules(self) -> Metric:
        return GaugeMetricFamily(
            "scheduler_invalid_rules",
            "Schedules parked because their rule could not be evaluated (last_error set).",
            value=Schedule.objects.exclude(last_error="").count(),
        )

    def _open_occurrences(self) -> Metric:
        return _by_label(
            "scheduler_occurrences_open",
            "Occurrences not finished yet, by state.",
            "state",
            Occurrence.objects.filter(state__in=OPEN_STATES).values_list("state"),
            OPEN_STATES,
        )

    def _dead_letters(self) -> Metric:
        gauge = GaugeMetricFamily(
            "scheduler_dead_letters",
            "Failed occurrences (the dead-letter state, replayable), by reason.",
            labels=["reason"],
        )
        rows = (
            Occurrence.objects.filter(state=OccurrenceState.FAILED)
            .values_list("reason")
            .annotate(n=Count("id"))
        )
        for reason, count in rows:
            gauge.add_metric([reason or "unknown"], count)
        return gauge

    def _outbox(self, now: datetime) -> Iterator[Metric]:
        from scheduler_app.outbox import UNPUBLISHED

        outbox = Occurrence.objects.filter(UNPUBLISHED)
        yield GaugeMetricFamily(
            "scheduler_outbox_backlog",
            "Occurrences waiting to be handed to the broker.",
            value=outbox.count(),
        )
        oldest = Occurrence.objects.filter(state=OccurrenceState.PENDING).aggregate(
            Min("created_at")
        )["created_at__min"]
        yield GaugeMetricFamily(
            "scheduler_outbox_oldest_age_seconds",
            "Age of the oldest pending occurrence (0 when the outbox is empty).",
            value=max((now - oldest).total_seconds(), 0.0) if oldest else 0.0,
        )

    def _counters(self) -> Iterator[Metric]:
        rows = Schedule.objects.values_list("misfire_policy").annotate(
            missed=Sum("missed_count"),
            skipped=Sum("skipped_count"),
            caught_up=Sum("caught_up_count"),
            created=Sum("occurrence_count"),
        )
        misfires = CounterMetricFamily(
            "scheduler_misfire_slots",
            "Late slots (beyond max_lateness) by misfire policy and outcome: late (all of "
            "them), skipped (not run), caught_up (run late).",
            labels=["policy", "outcome"],
        )
        totals = {"missed": 0, "skipped": 0, "caught_up": 0, "occurrences": 0}
        for policy, missed, skipped, caught_up, occurrences in rows:
            for outcome, value in (
                ("late", missed),
                ("skipped", skipped),
                ("caught_up", caught_up),
            ):
                misfires.add_metric([policy, outcome], value or 0)
            for name, value in zip(totals, (missed, skipped, caught_up, occurrences), strict=True):
                totals[name] += value or 0
        yield misfires
        for name, help_text in (
            ("missed", "Slots found later than max_lateness."),
            ("skipped", "Late slots not run (misfire policy)."),
            ("caught_up", "Late slots run by the misfire policy."),
            ("occurrences", "Occurrences created."),
        ):
            yield CounterMetricFamily(f"scheduler_slots_{name}", help_text, value=totals[name])

    def _beats(self, now: datetime) -> Iterator[Metric]:
        from scheduler_app.monitoring.heartbeat import alive

        beats = list(alive(now, get_settings().HEALTH_STALE))
        yield GaugeMetricFamily(
            "scheduler_beats_alive",
            "Beat processes that ticked within SCHEDULER_HEALTH_STALE seconds.",
            value=len(beats),
        )
        newest = BeatHeartbeat.objects.aggregate(last=Max("last_tick_at"))["last"]
        yield GaugeMetricFamily(
            "scheduler_beat_last_tick_timestamp_seconds",
            "Unix time of the most recent beat tick (0: no beat ever ticked).",
            value=newest.timestamp() if newest else 0.0,
        )
        skew = GaugeMetricFamily(
            "scheduler_clock_skew_seconds",
            "Database clock minus the beat host's clock (PostgreSQL; absent on SQLite).",
            labels=["beat"],
        )
        for beat in beats:
            if beat.clock_skew is not None:
                skew.add_metric([f"{beat.host}:{beat.pid}"], beat.clock_skew)
        yield skew

    def _kill_switches(self) -> Metric:
        return _by_label(
            "scheduler_kill_switches_on",
            "Kill switches turned on, by scope (global, tenant, task).",
            "scope",
            KillSwitch.objects.filter(enabled=True).values_list("scope"),
            KillSwitchScope.values,
        )

    def _due_lag(self, now: datetime) -> Metric:
        earliest = Schedule.objects.filter(status=ScheduleStatus.ACTIVE).aggregate(
            Min("next_run_at")
        )["next_run_at__min"]
        lag = max((now - earliest).total_seconds(), 0.0) if earliest else 0.0
        return GaugeMetricFamily(
            "scheduler_due_lag_seconds",
            "How far behind the earliest due schedule is (0 when nothing is overdue); "
            "see scheduler_unhealthy_schedules for how many are.",
            value=lag,
        )


def _by_label(
    name: str, help_text: str, label: str, rows: QuerySet[Any, Any], keys: Iterable[str]
) -> Metric:
    """A gauge with one sample per key (0 when no row has it), counted by the database."""
    gauge = GaugeMetricFamily(name, help_text, labels=[label])
    counts = dict(rows.annotate(n=Count("pk")))
    for key in keys:
        gauge.add_metric([key], counts.get(key, 0))
    return gauge


class _Events(Collector):
    """This process's event instruments, or every process's in multiprocess mode."""

    def collect(self) -> Iterator[Metric]:
        path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
        if path:
            from prometheus_client.multiprocess import MultiProcessCollector

            yield from MultiProcessCollector(None, path=path).collect()
        else:
            yield from EVENTS.collect()


def build_registry(clock: Clock | None = None, *, own_thread: bool = False) -> CollectorRegistry:
    """A registry with everything: the database state and the event counters."""
    collectors = CollectorRegistry(auto_describe=False)
    collectors.register(SchedulerCollector(clock, own_thread=own_thread))
    collectors.register(_Events())
    return collectors


registry = build_registry  # the name scheduler_app.views used before


def serve(port: int, addr: str = "0.0.0.0") -> None:
    """Serve ``/metrics`` on ``port`` from a thread of this process (beat, worker)."""
    from prometheus_client import start_http_server

    start_http_server(port, addr=addr, registry=build_registry(own_thread=True))
    logger.info("metrics served", extra={"action": "metrics.serving", "port": port})
