"""Prometheus metrics: state read from the database at scrape time, events counted as they happen.

Two sources, one exposition:

- ``SchedulerCollector`` reads the database when scraped (schedules, backlog, dead letters,
  overdue schedules, beats alive, clock skew ...): every process that serves metrics agrees.
- The event instruments (``scheduler_app.observability.instruments``: lateness histograms,
  occurrence counters, duplicates, handoff failures, tick duration) count in the process where
  the event happens: the beat (handoffs, ticks) and the workers (outcomes). With
  ``PROMETHEUS_MULTIPROC_DIR`` set (prefork workers, several web processes) every process
  writes them to that directory and ``build_registry`` serves the sum over all of them; without
  it each process serves its own.

Who reads a scrape decides what it holds (an ``Audience``): everything for the beat's own port,
superusers and the ``SCHEDULER_METRICS_TOKEN`` bearer; for a tenant's staff only the series
labelled with one of their tenants (see ``scheduler_app.monitoring.views.metrics``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Count, Min, QuerySet, Sum
from prometheus_client import start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector, CollectorRegistry

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.conf import get_settings
from scheduler_app.dispatch.outbox import UNPUBLISHED
from scheduler_app.models import (
    OPEN_STATES,
    KillSwitch,
    KillSwitchScope,
    Occurrence,
    OccurrenceState,
    Schedule,
    ScheduleHealth,
    ScheduleRuntime,
    ScheduleStatus,
)
from scheduler_app.monitoring.health import oldest_pending
from scheduler_app.monitoring.heartbeat import alive, last_tick
from scheduler_app.monitoring.monitor import overdue_count
from scheduler_app.observability.instruments import EVENTS, TENANT_LABEL, TENANT_SERIES
from scheduler_app.observability.instruments import TICK_BATCH as TICK_BATCH  # for the ticker
from scheduler_app.observability.instruments import TICK_DURATION as TICK_DURATION

logger = logging.getLogger("scheduler_app.metrics")

ACTIVE_SCHEDULES = "scheduler_active_schedules"
SCOPED_SERIES = TENANT_SERIES | {ACTIVE_SCHEDULES}
"""Every series labelled by tenant; all others are system-wide figures."""


@dataclass(frozen=True)
class Audience:
    """Who reads a scrape: ``system`` sees every figure; otherwise only the series labelled
    with a tenant in ``tenants`` (``None``: any tenant), never a system-wide figure."""

    system: bool = True
    tenants: frozenset[str] | None = None

    @classmethod
    def of_tenants(cls, tenants: Collection[str] | None) -> Audience:
        return cls(system=False, tenants=None if tenants is None else frozenset(tenants))

    def sees(self, labels: dict[str, str]) -> bool:
        if self.system:
            return True
        tenant = labels.get(TENANT_LABEL)
        return tenant is not None and (self.tenants is None or tenant in self.tenants)


EVERYTHING = Audience()


class SchedulerCollector(Collector):
    """State read from the database at scrape time (a few indexed or aggregate queries)."""

    def __init__(
        self,
        clock: Clock | None = None,
        *,
        own_thread: bool = False,
        audience: Audience = EVERYTHING,
    ) -> None:
        self.clock = clock or SystemClock()
        self.own_thread = own_thread
        self.audience = audience

    def collect(self) -> Iterator[Metric]:
        try:
            yield from self._collect()
        finally:
            if self.own_thread:  # the beat's HTTP thread: no connection left open between scrapes
                connection.close()

    def _collect(self) -> Iterator[Metric]:
        if not self.audience.system:  # the system-wide figures are not even computed
            yield self._active_by_tenant()
            return
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
            ACTIVE_SCHEDULES,
            "Active schedules by tenant and kind of rule.",
            labels=[TENANT_LABEL, "kind"],
        )
        active = Schedule.objects.filter(status=ScheduleStatus.ACTIVE)
        if self.audience.tenants is not None and not self.audience.system:
            active = active.filter(tenant__in=self.audience.tenants)
        rows = active.values_list("tenant", "kind").annotate(n=Count("id"))
        for tenant, kind, count in rows:
            gauge.add_metric([tenant, kind], count)
        return gauge

    def _health(self, now: datetime) -> Metric:
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
        outbox = Occurrence.objects.filter(UNPUBLISHED)
        yield GaugeMetricFamily(
            "scheduler_outbox_backlog",
            "Occurrences waiting to be handed to the broker.",
            value=outbox.count(),
        )
        yield GaugeMetricFamily(
            "scheduler_outbox_oldest_age_seconds",
            "Age of the oldest pending occurrence (0 when the outbox is empty).",
            value=_age(now, oldest_pending()),
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
        beats = list(alive(now, get_settings().HEALTH_STALE))
        yield GaugeMetricFamily(
            "scheduler_beats_alive",
            "Beat processes that ticked within SCHEDULER_HEALTH_STALE seconds.",
            value=len(beats),
        )
        newest = last_tick()
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
        # The runtime table alone: the same over the join with the schedule table reads it all.
        earliest = ScheduleRuntime.objects.filter(status=ScheduleStatus.ACTIVE).aggregate(
            Min("next_run_at")
        )["next_run_at__min"]
        return GaugeMetricFamily(
            "scheduler_due_lag_seconds",
            "How far behind the earliest due schedule is (0 when nothing is overdue); "
            "see scheduler_unhealthy_schedules for how many are.",
            value=_age(now, earliest),
        )


def _age(now: datetime, since: datetime | None) -> float:
    """Seconds from ``since`` to ``now``, never below zero (0 without ``since``)."""
    return max((now - since).total_seconds(), 0.0) if since else 0.0


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
            yield from MultiProcessCollector(None, path=path).collect()
        else:
            yield from EVENTS.collect()


class _Scoped(Collector):
    """Only what ``audience`` may read of ``inner``'s families: the one place the rule lives,
    so a figure added later is system-wide (hidden from a tenant's staff) unless it is one of
    ``SCOPED_SERIES``."""

    def __init__(self, inner: Collector, audience: Audience) -> None:
        self.inner = inner
        self.audience = audience

    def collect(self) -> Iterator[Metric]:
        for family in self.inner.collect():
            if self.audience.system:
                yield family
            elif family.name in SCOPED_SERIES:
                kept = Metric(family.name, family.documentation, family.type, family.unit)
                kept.samples = [s for s in family.samples if self.audience.sees(s.labels)]
                yield kept


def build_registry(
    clock: Clock | None = None, *, own_thread: bool = False, audience: Audience = EVERYTHING
) -> CollectorRegistry:
    """A registry with what ``audience`` may read: the database state and the event counters."""
    collectors = CollectorRegistry(auto_describe=False)
    state = SchedulerCollector(clock, own_thread=own_thread, audience=audience)
    collectors.register(_Scoped(state, audience))
    collectors.register(_Scoped(_Events(), audience))
    return collectors


def serve(port: int, addr: str = "0.0.0.0") -> None:
    """Serve ``/metrics`` on ``port`` from a thread of this process (beat, worker): every
    figure, for the network the port is reachable from (keep it internal)."""
    start_http_server(port, addr=addr, registry=build_registry(own_thread=True))
    logger.info("metrics served", extra={"action": "metrics.serving", "port": port})
