"""``manage.py scheduler_status``: beats, backlogs, lateness of the last hour, kill switches.

The lateness lines are the dispatch and start lag (``monitoring.lateness``, the monitoring
page's definition: nearest-rank percentiles over the runs first handed off in the last hour) of
the scheduled and catch-up runs only (what the p99 alert reads); backfills and manual runs are
listed apart: a backfill's slots are in the past by design.

Exit status 1 when no beat ticked within ``SCHEDULER_HEALTH_STALE`` seconds, 2 when the
database could not be read.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import DatabaseError

from scheduler_app.clock import SystemClock
from scheduler_app.conf import get_settings
from scheduler_app.monitoring.health import Status, gather_status
from scheduler_app.monitoring.lateness import seconds_text
from scheduler_app.monitoring.monitor import human_duration


class Command(BaseCommand):
    help = "Show the beats, the due and outbox backlogs, recent lateness and kill switches."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            status = gather_status(SystemClock().now(), get_settings().HEALTH_STALE)
        except DatabaseError as exc:
            self.stderr.write(f"could not read the scheduler's state: {exc}")
            raise SystemExit(2) from None
        if options["json"]:
            self.stdout.write(json.dumps(status.as_dict(), indent=2, default=str))
        else:
            for line in lines(status):
                self.stdout.write(line)
        if not status.health.ok:
            raise SystemExit(1)


def lines(status: Status) -> list[str]:
    out = [f"health: {'ok' if status.health.ok else 'FAILING'}: {status.health.message}", ""]
    out.append("beats:")
    for beat in status.beats or []:
        state = "alive" if beat["alive"] else ("stopped" if beat["stopped_at"] else "silent")
        skew = "" if beat["clock_skew"] is None else f", clock skew {beat['clock_skew']:+.3f} s"
        out.append(
            f"  {beat['host']}:{beat['pid']} v{beat['version']} {state}, last tick "
            f"{human_duration(beat['last_tick_age'])} ago, last batch {beat['last_batch_size']}"
            f"{skew}" + (f", last error: {beat['last_error']}" if beat["last_error"] else "")
        )
    if not status.beats:
        out.append("  none")
    oldest = status.outbox_oldest_age
    out += [
        "",
        f"due backlog: {status.due_backlog} schedule(s) due now",
        f"outbox backlog: {status.outbox_backlog} occurrence(s)"
        + (f", oldest {human_duration(oldest)} old" if oldest is not None else ""),
    ]
    out += lateness_lines(status)
    out.append(f"unhealthy schedules: {status.unhealthy_schedules}")
    out.append("kill switches on:" + ("" if status.kill_switches else " none"))
    for switch in status.kill_switches:
        where = switch["scope"] + (f" {switch['target']}" if switch["target"] else "")
        out.append(f"  {where}: by {switch['by']} since {switch['since']}: {switch['reason']}")
    return out


APART = (("backfill", "backfill"), ("manual", "manual (run now)"))
"""The triggers reported apart from the summary, with their label."""
MEASURES = (
    ("dispatch", "lateness_last_hour", "first handoff - slot"),
    ("start", "start_lateness_last_hour", "worker start - slot"),
)
"""The summary lines: which lag, where ``Status`` holds it, how it is measured."""


def lateness_lines(status: Status) -> list[str]:
    """The summary's dispatch and start lag, then each trigger reported apart; each line says
    which lag, which runs and which percentile (the monitoring page's figures,
    ``monitoring.lateness``)."""
    result = []
    for name, attribute, measured in MEASURES:
        late = getattr(status, attribute)
        head = f"{name} lateness, last hour, scheduled and catch-up"
        result.append(
            f"{head} ({_how(late, measured)}): {_figures(late)}"
            if late.get("count")
            else f"{head}: no runs handed off"
        )
    for trigger, label in APART:
        figures = status.lateness_by_trigger.get(trigger) or {}
        if figures.get("count"):
            result.append(
                f"  apart, {label} ({figures['count']} handoffs, not in the figures above): "
                f"{_figures(figures)} ({figures['measure']}, {figures['method']})"
            )
    return result


def _how(late: dict[str, Any], measured: str) -> str:
    """``dispatch lag = first handoff - slot, nearest-rank over 12 runs in the last hour``."""
    return (
        f"{late['measure']} = {measured}, {late['method']} over {late['count']} runs "
        f"in the {late['window']}"
    )


def _figures(late: dict[str, Any]) -> str:
    return ", ".join(f"{name} {seconds_text(late[name])}" for name in ("p50", "p95", "p99", "max"))
