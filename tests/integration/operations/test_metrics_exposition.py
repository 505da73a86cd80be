"""Every metric, read back through prometheus_client's own parser, moves when it should."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, override_settings
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from scheduler_app import events
from scheduler_app.clock import FakeClock
from scheduler_app.models import BeatHeartbeat, Occurrence, OccurrenceState, Schedule
from scheduler_app.monitoring.metrics import _Events, build_registry
from scheduler_app.monitoring.monitor import run_monitor
from scheduler_app.safety.killswitch import set_kill_switch
from tests.integration.operations.helpers import finish
from tests.integration.support import START, MemoryPublisher, rows, schedule, ticker

pytestmark = pytest.mark.django_db
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(clock: FakeClock) -> Samples:
    text = generate_latest(build_registry(clock)).decode()
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def key(name: str, **labels: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return (name, tuple(sorted(labels.items())))


def test_each_metric_moves_when_it_should() -> None:
    clock = FakeClock(START)
    before = scrape(clock)
    ping = schedule(clock, tenant="acme", kind="interval", rule="60s", expected_every=600)
    schedule(clock, tenant="acme", kind="cron", rule="0 * * * *", task="demo.hourly_sync")
    schedule(clock, kind="cron", rule="0 9 * * *", expected_every=3600)  # never succeeds
    beat = ticker(MemoryPublisher(), clock, MONITOR_INTERVAL=3600.0)
    beat.tick()  # publishes the first slot of the interval schedule
    [first] = rows(ping)
    finish(first, OccurrenceState.SUCCEEDED, START + timedelta(seconds=5))
    clock.advance(60)
    broker = MemoryPublisher()
    broker.down = True
    ticker(broker, clock).tick()  # the next slot stays in the outbox
    clock.advance(30)
    events.duplicate_prevented.send(
        sender=None, kind="delivery", schedule_id=None, occurrence_id=None
    )
    set_kill_switch(
        "task", "demo.hourly_sync", enabled=True, by="ops", reason="test", now=clock.now()
    )
    clock.set(START + timedelta(hours=1, minutes=10))
    ticker(MemoryPublisher(), clock, MONITOR_INTERVAL=3600.0).tick()  # catch up; 01:00 killed
    Occurrence.objects.filter(pk=rows(ping)[-1].pk).update(state="failed", reason="permanent_error")
    Schedule.objects.filter(pk=ping.pk).update(last_error="zone vanished")
    BeatHeartbeat.objects.update(clock_skew=0.25)
    beats = scrape(clock)  # right after a tick
    assert beats[key("scheduler_beats_alive")] == 1 > before[key("scheduler_beats_alive")]
    skew = [value for (name, _), value in beats.items() if name == "scheduler_clock_skew_seconds"]
    assert skew == [0.25]  # the beats that are alive
    clock.set(START + timedelta(hours=3))  # nothing ticked since: overdue, and no success
    run_monitor(clock.now())
    after = scrape(clock)

    def grew(name: str, **labels: str) -> None:
        assert after[key(name, **labels)] > before.get(key(name, **labels), 0), (name, labels)

    grew("scheduler_dispatch_lateness_seconds_count", trigger="scheduled", lateness_class="none")
    grew(
        "scheduler_dispatch_lateness_seconds_bucket",
        trigger="scheduled",
        lateness_class="none",
        le="+Inf",
    )
    grew("scheduler_start_lateness_seconds_count", trigger="scheduled", lateness_class="none")
    grew(
        "scheduler_occurrences_emitted_total", trigger="scheduled", tenant="acme", task="demo.ping"
    )
    grew(
        "scheduler_occurrences_finished_total",
        state="succeeded",
        trigger="scheduled",
        tenant="acme",
        task="demo.ping",
    )
    grew("scheduler_occurrences_skipped_total", reason="kill_switch")
    grew("scheduler_duplicates_prevented_total", kind="delivery")
    grew("scheduler_handoff_failures_total")
    grew("scheduler_tick_duration_seconds_count")
    grew("scheduler_tick_batch_size_count")
    grew("scheduler_schedules", status="active")
    grew("scheduler_active_schedules", tenant="acme", kind="interval")
    grew("scheduler_active_schedules", tenant="acme", kind="cron")
    grew("scheduler_unhealthy_schedules", problem="overdue")
    grew("scheduler_unhealthy_schedules", problem="no_success")
    grew("scheduler_invalid_rules")
    grew("scheduler_occurrences_open", state="dispatched")
    grew("scheduler_dead_letters", reason="permanent_error")
    grew("scheduler_misfire_slots_total", policy="catch_up", outcome="late")
    grew("scheduler_slots_occurrences_total")
    grew("scheduler_slots_missed_total")
    grew("scheduler_beat_last_tick_timestamp_seconds")
    grew("scheduler_kill_switches_on", scope="task")
    grew("scheduler_due_lag_seconds")
    assert after[key("scheduler_beats_alive")] == 0  # three hours without a tick


def test_the_outbox_backlog_and_its_age_rise_while_the_broker_is_down() -> None:
    clock = FakeClock(START)
    schedule(clock, kind="interval", rule="60s")
    broker = MemoryPublisher()
    broker.down = True
    ticker(broker, clock).tick()
    clock.advance(90)
    found = scrape(clock)
    assert found[key("scheduler_outbox_backlog")] == 1
    assert found[key("scheduler_outbox_oldest_age_seconds")] == 90


@override_settings(SCHEDULER_METRICS_TOKEN="s3cret-token")
def test_the_metrics_view_needs_staff_or_the_token() -> None:
    client = Client()
    url = "/scheduler/metrics"
    with override_settings(ROOT_URLCONF="tests.integration.operations.urls"):
        assert client.get(url).status_code == 401
        assert client.get(url, HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
        response = client.get(url, HTTP_AUTHORIZATION="Bearer s3cret-token")
        assert response.status_code == 200
        assert "scheduler_beats_alive" in response.content.decode()
        user = get_user_model().objects.create_user("ops", is_staff=True, is_superuser=True)
        client.force_login(user)
        assert client.get(url).status_code == 200


def test_multiprocess_mode_serves_the_sum_over_every_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prefork workers each write their counters to PROMETHEUS_MULTIPROC_DIR; a scrape sums."""
    code = (
        "import django; django.setup()\n"
        "from scheduler_app.observability.instruments import DUPLICATES_PREVENTED\n"
        "DUPLICATES_PREVENTED.labels('delivery').inc()\n"
    )
    env = {
        **os.environ,
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "project.settings",
    }
    for _ in range(2):
        subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    values = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in _Events().collect()
        for sample in family.samples
    }
    assert values[key("scheduler_duplicates_prevented_total", kind="delivery")] == 2
