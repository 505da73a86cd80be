"""Prometheus metrics at /metrics: schedules, open occurrences, dead letters, counters, lag."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from scheduler_app import services
from scheduler_app.clock import FakeClock
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.monitoring.metrics import SchedulerCollector
from tests.integration.support import MemoryPublisher, ticker

pytestmark = pytest.mark.django_db


def samples(clock: FakeClock) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for metric in SchedulerCollector(clock).collect():
        for sample in metric.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_dead_letters_open_occurrences_and_counters_are_exposed() -> None:
    schedule = services.create_schedule(
        task="demo.ping", kind="interval", rule="60s", overlap_policy="allow"
    )
    clock = FakeClock(schedule.next_run_at + timedelta(minutes=3, seconds=30))
    ticker(MemoryPublisher(), clock).tick()  # 4 slots: 1 on time (within 60 s), 3 caught up
    first = Occurrence.objects.order_by("scheduled_for").first()
    assert first is not None
    Occurrence.objects.filter(pk=first.pk).update(
        state=OccurrenceState.FAILED, reason="permanent_error"
    )
    found = samples(clock)
    assert found[("scheduler_dead_letters", (("reason", "permanent_error"),))] == 1
    assert found[("scheduler_occurrences_open", (("state", "dispatched"),))] == 3
    assert found[("scheduler_schedules", (("status", "active"),))] == 1
    assert found[("scheduler_slots_caught_up_total", ())] == 3
    assert found[("scheduler_due_lag_seconds", ())] == 0


def test_due_lag_grows_when_the_beat_is_behind() -> None:
    schedule = services.create_schedule(task="demo.ping", kind="interval", rule="60s")
    clock = FakeClock(schedule.next_run_at + timedelta(seconds=90))
    assert samples(clock)[("scheduler_due_lag_seconds", ())] == 90


def test_the_metrics_endpoint_speaks_prometheus() -> None:
    services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root"))
    response = client.get("/metrics")
    assert response.status_code == 200
    assert 'scheduler_schedules{status="active"} 1.0' in response.content.decode()
