"""Dispatch lateness separates triggers: the summary (and the p99 alert) reads scheduled and
catch-up handoffs only; a backfill's slots (in the past by design) and manual runs are reported
apart, so a backfill never looks like an outage."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from scheduler_app import services
from scheduler_app.clock import FakeClock
from scheduler_app.models import Occurrence, Schedule
from scheduler_app.monitoring.health import gather_status
from scheduler_app.safety.actors import COMMAND
from tests.integration.support import MemoryPublisher, schedule, ticker

pytestmark = pytest.mark.django_db


def late_by(trigger: str) -> list[float]:
    rows = Occurrence.objects.filter(trigger=trigger).exclude(emitted_at=None)
    return sorted((row.emitted_at - row.scheduled_for).total_seconds() for row in rows)


def six_slot_backfill_beside_scheduled_runs() -> FakeClock:
    """Six past slots of an hourly cron backfilled (1 to 6 hours "late" at handoff) and a
    minutely schedule run on time and caught up by the misfire policy: all handed off now."""
    now = timezone.now().replace(microsecond=0)
    clock = FakeClock(now - timedelta(seconds=150))
    schedule(clock, kind="interval", rule="60s", misfire_policy="catch_up")
    clock.set(now)
    hourly = schedule(clock, kind="cron", rule="0 * * * *")
    beat = ticker(MemoryPublisher(), clock)
    beat.tick()
    top = now.replace(minute=0, second=0)
    plan = services.backfill(
        hourly, start=top - timedelta(hours=6), end=top - timedelta(hours=1), clock=clock,
        user=COMMAND, overlap="allow",  # all six handed off at once
    )  # fmt: skip
    assert plan.count - plan.existing == 6, plan
    beat.tick()
    assert len(late_by("backfill")) == 6
    return clock


def test_the_summary_reads_only_scheduled_and_catch_up_handoffs() -> None:
    clock = six_slot_backfill_beside_scheduled_runs()
    status = gather_status(clock.now(), 60.0)
    assert late_by("scheduled") and late_by("catch_up")  # both kinds are in the summary
    on_rule = sorted(late_by("scheduled") + late_by("catch_up"))
    summary = status.lateness_last_hour
    assert summary["count"] == len(on_rule) >= 2
    assert summary["max"] == pytest.approx(on_rule[-1])
    assert summary["p99"] is not None and summary["p99"] < 200  # not the backfill's hours
    backfill = status.lateness_by_trigger["backfill"]
    assert backfill["count"] == 6
    assert backfill["max"] == pytest.approx(late_by("backfill")[-1])
    assert backfill["max"] > 5 * 3600  # what made the old summary's p99 fire
    scheduled, catch_up = (
        status.lateness_by_trigger[t]["count"] for t in ("scheduled", "catch_up")
    )
    assert scheduled + catch_up == summary["count"]


def test_a_manual_run_is_reported_apart_too() -> None:
    now = timezone.now().replace(microsecond=0)
    clock = FakeClock(now - timedelta(seconds=30))
    target = schedule(clock, kind="cron", rule="0 3 * * *")
    clock.set(now)
    services.run_now(target, clock=clock, user=COMMAND)
    ticker(MemoryPublisher(), clock).tick()
    status = gather_status(now, 60.0)
    assert status.lateness_last_hour["count"] == 0
    assert status.lateness_by_trigger["manual"]["count"] == 1


def test_scheduler_status_prints_the_summary_and_the_backfill_apart() -> None:
    six_slot_backfill_beside_scheduled_runs()
    out = StringIO()
    call_command("scheduler_status", stdout=out)
    text = out.getvalue()
    head = "dispatch lateness, last hour, scheduled and catch-up ("
    (summary,) = [line for line in text.splitlines() if line.startswith(head)]
    p99 = float(summary.split("p99 ")[1].split(" s")[0])
    assert p99 < 200, summary
    (apart,) = [line for line in text.splitlines() if "apart, backfill" in line]
    assert apart.startswith("  apart, backfill (6 handoffs, not in the figures above): p50 ")
    assert "manual" not in text  # no manual run: no line


def test_scheduler_status_json_carries_each_trigger() -> None:
    six_slot_backfill_beside_scheduled_runs()
    out = StringIO()
    call_command("scheduler_status", "--json", stdout=out)
    document = json.loads(out.getvalue())
    assert set(document["lateness_by_trigger"]) == {"scheduled", "catch_up", "backfill", "manual"}
    assert document["lateness_by_trigger"]["backfill"]["count"] == 6
    assert document["lateness_by_trigger"]["manual"]["count"] == 0
    assert document["lateness_last_hour"]["p99"] < 200
    assert Schedule.objects.count() == 2
