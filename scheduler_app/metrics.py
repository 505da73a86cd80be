"""Prometheus metrics, read from the database at scrape time (so every beat and worker agrees).

Expose them with ``scheduler_app.views.metrics`` (e.g. ``path("metrics", metrics)``). Each
scrape runs a few indexed queries: open occurrences and dead letters use partial indexes,
the counters sum one column of the schedule table.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from django.db.models import Count, Min, Sum
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.models import OPEN_STATES, Occurrence, OccurrenceState, Schedule, ScheduleStatus


class SchedulerCollector(Collector):
    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or SystemClock()

    def collect(self) -> Iterator[Metric]:
        yield self._schedules()
        yield self._open_occurrences()
        yield self._dead_letters()
        yield from self._counters()
        yield self._due_lag(self.clock.now())

    def _schedules(self) -> Metric:
        gauge = GaugeMetricFamily("scheduler_schedules", "Schedules by status.", labels=["status"])
        counts = dict(Schedule.objects.values_list("status").annotate(n=Count("id")))
        for status in ScheduleStatus.values:
            gauge.add_metric([status], counts.get(status, 0))
        return gauge

    def _open_occurrences(self) -> Metric:
        gauge = GaugeMetricFamily(
            "scheduler_occurrences_open",
            "Occurrences not finished yet, by state.",
            labels=["state"],
        )
        counts = dict(
            Occurrence.objects.filter(state__in=OPEN_STATES)
            .values_list("state")
            .annotate(n=Count("id"))
        )
        for state in OPEN_STATES:
            gauge.add_metric([state], counts.get(state, 0))
        return gauge

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

    def _counters(self) -> Iterator[Metric]:
        sums = Schedule.objects.aggregate(
            missed=Sum("missed_count"),
            skipped=Sum("skipped_count"),
            caught_up=Sum("caught_up_count"),
            occurrences=Sum("occurrence_count"),
        )
        for name, help_text in (
            ("missed", "Slots found later than max_lateness."),
            ("skipped", "Late slots not run (misfire policy)."),
            ("caught_up", "Late slots run by the misfire policy."),
            ("occurrences", "Occurrences created."),
        ):
            yield CounterMetricFamily(f"scheduler_slots_{name}", help_text, value=sums[name] or 0)

    def _due_lag(self, now: datetime) -> Metric:
        earliest = Schedule.objects.filter(status=ScheduleStatus.ACTIVE).aggregate(
            Min("next_run_at")
        )["next_run_at__min"]
        lag = max((now - earliest).total_seconds(), 0.0) if earliest else 0.0
        return GaugeMetricFamily(
            "scheduler_due_lag_seconds",
            "How far behind the earliest due schedule is (0 when nothing is overdue): "
            "alert when it grows, the beat is down or overloaded.",
            value=lag,
        )


def registry(clock: Clock | None = None) -> CollectorRegistry:
    collectors = CollectorRegistry(auto_describe=False)
    collectors.register(SchedulerCollector(clock))
    return collectors
