"""The monitoring page and ``scheduler_status`` show the same lateness for the same hour, and
each says which lag and which percentile (issue 35: the page said p99 34.2 s, the command
0.3 s: the page read the latest handoff, which a retry moves, the command the first, each with
its own percentile)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from scheduler_app.clock import FakeClock
from scheduler_app.models import Occurrence
from scheduler_app.monitoring.health import gather_status
from scheduler_app.monitoring.lateness import nearest_rank, window_rows
from tests.integration.support import MemoryPublisher, schedule, ticker

pytestmark = pytest.mark.django_db

FIRST_HANDOFF = [0.5, 1.0, 2.0, 4.0]
"""Seconds after its slot each of four runs was first handed off."""
RETRIED = 34.2
"""The last run was retried: handed off again (``dispatched_at``) 34.2 s after its slot."""


def four_runs_one_retried() -> datetime:
    """Four minutely slots of the last hour, first handed off 0.5 to 4 s late, each started a
    second after; the last one retried, its latest handoff 34.2 s after the slot."""
    now = timezone.now().replace(microsecond=0)
    clock = FakeClock(now - timedelta(seconds=200))
    schedule(clock, kind="interval", rule="60s", misfire_policy="catch_up")
    clock.set(now)
    ticker(MemoryPublisher(), clock).tick()
    rows = list(Occurrence.objects.order_by("scheduled_for"))
    assert len(rows) == 4, [row.scheduled_for for row in rows]
    for row, late in zip(rows, FIRST_HANDOFF, strict=True):
        handed = row.scheduled_for + timedelta(seconds=late)
        Occurrence.objects.filter(pk=row.pk).update(
            emitted_at=handed,
            dispatched_at=handed,
            started_at=handed + timedelta(seconds=1),
        )
    Occurrence.objects.filter(pk=rows[-1].pk).update(
        dispatched_at=rows[-1].scheduled_for + timedelta(seconds=RETRIED)
    )
    return now


def test_nearest_rank_is_the_value_at_rank_ceil_p_n() -> None:
    assert [nearest_rank([1.0, 2.0, 3.0, 4.0], p) for p in (0.5, 0.95, 0.99)] == [2.0, 4.0, 4.0]
    assert nearest_rank([], 0.5) is None
    assert nearest_rank([7.0], 0.01) == 7.0


def test_the_page_and_the_command_read_the_same_figures() -> None:
    now = four_runs_one_retried()
    status = gather_status(now, 60.0)
    hour, _day = window_rows(Occurrence.objects.all(), now)
    expected = {"count": 4, "p50": 1.0, "p95": 4.0, "p99": 4.0, "max": 4.0}
    assert {key: status.lateness_last_hour[key] for key in expected} == expected
    assert {key: getattr(hour.dispatch, key) for key in expected} == expected
    assert status.start_lateness_last_hour["p99"] == hour.start.p99 == 5.0
    assert status.lateness_last_hour["method"] == "nearest-rank"
    assert hour.dispatch.label() == "dispatch lag p99, nearest-rank over 4 runs in the last hour"
    assert hour.start.label() == "start lag p99, nearest-rank over 4 runs in the last hour"


def test_scheduler_status_says_which_lag_and_which_percentile() -> None:
    now = four_runs_one_retried()
    out = StringIO()
    call_command("scheduler_status", stdout=out)
    lines = [line for line in out.getvalue().splitlines() if "lateness, last hour" in line]
    assert lines == [
        "dispatch lateness, last hour, scheduled and catch-up (dispatch lag = first handoff - "
        "slot, nearest-rank over 4 runs in the last hour): p50 1.0 s, p95 4.0 s, p99 4.0 s, "
        "max 4.0 s",
        "start lateness, last hour, scheduled and catch-up (start lag = worker start - slot, "
        "nearest-rank over 4 runs in the last hour): p50 2.0 s, p95 5.0 s, p99 5.0 s, "
        "max 5.0 s",
    ]
    out = StringIO()
    call_command("scheduler_status", "--json", stdout=out)
    document = json.loads(out.getvalue())
    assert document["lateness_last_hour"]["measure"] == "dispatch lag"
    assert document["start_lateness_last_hour"]["p99"] == 5.0
    assert now


def test_the_monitoring_page_shows_the_commands_figures() -> None:
    four_runs_one_retried()
    client = Client()
    client.force_login(User.objects.create_superuser("watch", "w@example.com", "x"))
    page = client.get(reverse("admin:scheduler_app_monitoring")).content.decode()
    table = page.split('id="sched-lateness"')[1].split("</table>")[0]
    assert "<th>last hour (nearest-rank)</th><td>4</td>" in table
    assert "<td>1.0 s</td><td>4.0 s</td><td>4.0 s</td>" in table  # dispatch p50, p95, p99
    assert "34.2" not in table  # the retry's second handoff is not the dispatch lag
