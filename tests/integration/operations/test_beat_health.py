"""Beat heartbeats, the health view, scheduler_status, and the idle-tick query budget."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import OperationalError, connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scheduler_app.clock import FakeClock
from scheduler_app.models import BeatHeartbeat, Occurrence
from scheduler_app.safety.killswitch import set_kill_switch
from tests.integration.support import START, MemoryPublisher, schedule, ticker

pytestmark = pytest.mark.django_db


def test_a_beat_keeps_one_heartbeat_row_touched_on_its_cadence_and_marked_stopped() -> None:
    clock = FakeClock(START)
    beat = ticker(MemoryPublisher(), clock, HEALTH_STALE=60.0)
    beat.tick()
    [row] = BeatHeartbeat.objects.all()
    assert (row.started_at, row.last_tick_at, row.stopped_at) == (START, START, None)
    assert row.pid > 0 and row.host and row.version
    clock.advance(5)
    beat.tick()  # within HEALTH_STALE / 3: no write
    assert BeatHeartbeat.objects.get().last_tick_at == START
    clock.advance(20)
    beat.tick()
    assert BeatHeartbeat.objects.get().last_tick_at == START + timedelta(seconds=25)
    clock.set(START - timedelta(hours=1))  # the clock steps back: written at once
    beat.tick()
    assert BeatHeartbeat.objects.get().last_tick_at == START - timedelta(hours=1)
    beat.release_lease()
    assert BeatHeartbeat.objects.get().stopped_at == START - timedelta(hours=1)


def test_the_last_batch_size_and_a_tick_error_are_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60s")
    beat = ticker(MemoryPublisher(), clock)
    beat.tick()

    def database_gone(*_: object) -> None:
        raise OperationalError("server closed the connection")

    with monkeypatch.context() as patched:
        patched.setattr("scheduler_app.ticker.probe", database_gone)
        with pytest.raises(OperationalError):
            beat.tick()
    clock.set(target.next_run_at + timedelta(seconds=120))
    beat.tick()  # the next tick tells
    row = BeatHeartbeat.objects.get()
    assert row.last_batch_size == 4  # 2 slots created + 2 published
    assert row.last_error == "OperationalError: server closed the connection"
    assert row.last_error_at == clock.now()


@pytest.mark.urls("tests.integration.operations.urls")
def test_the_health_view_fails_without_a_beat_and_recovers_when_one_ticks() -> None:
    client = Client()
    response = client.get("/scheduler/health")
    assert response.status_code == 503
    assert response.json()["message"].startswith("no beat has ever ticked")
    ticker(MemoryPublisher(), FakeClock(timezone.now())).tick()
    response = client.get("/scheduler/health")
    assert response.status_code == 200 and response.json()["beats_alive"] == 1
    BeatHeartbeat.objects.update(last_tick_at=timezone.now() - timedelta(seconds=61))
    response = client.get("/scheduler/health")
    assert response.status_code == 503
    assert "no beat has ticked for 61 s (limit 60 s)" in response.json()["message"]


def status(*args: str) -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("scheduler_status", *args, stdout=out)
    except SystemExit as exit:
        return int(exit.code or 0), out.getvalue()
    return 0, out.getvalue()


def test_scheduler_status_shows_beats_backlogs_lateness_and_switches() -> None:
    now = timezone.now()
    clock = FakeClock(now - timedelta(minutes=10))
    schedule(clock, kind="interval", rule="60s")
    code, out = status()
    assert code == 1 and out.startswith("health: FAILING: no beat has ever ticked")
    clock.set(now)
    broker = MemoryPublisher()
    broker.down = True
    ticker(broker, clock, MONITOR_INTERVAL=3600.0).tick()
    set_kill_switch(
        "task", "demo.hourly_sync", enabled=True, by="alice", reason="bad deploy", now=now
    )
    code, out = status()
    assert code == 0, out
    assert "health: ok: 1 beat(s) alive" in out
    assert "outbox backlog: 10 occurrence(s), oldest 0 s old" in out
    assert "due backlog: 0 schedule(s) due now" in out
    assert "kill switches on:\n  task demo.hourly_sync: by alice since" in out
    code, out = status("--json")
    document = json.loads(out)
    assert document["outbox_backlog"] == 10 and document["health"]["ok"] is True
    assert document["beats"][0]["alive"] is True
    assert document["lateness_last_hour"]["count"] == 0


def test_scheduler_status_reports_dispatch_lateness_of_the_last_hour() -> None:
    now = timezone.now()
    clock = FakeClock(now - timedelta(seconds=150))
    schedule(clock, kind="interval", rule="60s")
    clock.set(now)
    ticker(MemoryPublisher(), clock).tick()
    emitted = Occurrence.objects.exclude(emitted_at=None)
    worst = max((row.emitted_at - row.scheduled_for).total_seconds() for row in emitted)
    document = json.loads(status("--json")[1])
    assert document["lateness_last_hour"]["count"] == emitted.count() >= 2
    assert worst > 60 and document["lateness_last_hour"]["max"] == pytest.approx(worst)


@pytest.mark.django_db(transaction=True)
def test_an_idle_tick_between_the_periodic_jobs_stays_within_three_queries() -> None:
    clock = FakeClock(START)
    schedule(clock, kind="cron", rule="0 8 * * *")
    beat = ticker(
        MemoryPublisher(),
        clock,
        MAX_INTERVAL=7200.0,
        RECONCILE_INTERVAL=86400.0,
        MONITOR_INTERVAL=86400.0,
        HEALTH_STALE=86400.0,
    )
    beat.tick()  # the first tick writes the heartbeat, runs the monitor and the skew check
    clock.advance(60)
    with CaptureQueriesContext(connection) as captured:
        beat.tick()
    assert len(captured.captured_queries) <= 3, [q["sql"] for q in captured.captured_queries]


@pytest.mark.django_db(transaction=True)  # the server's thread has its own connection
def test_the_beat_serves_its_own_metrics_port() -> None:
    import socket
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ticker(MemoryPublisher(), FakeClock(START), METRICS_PORT=port).tick()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        body = response.read().decode()
    assert "scheduler_tick_duration_seconds_count" in body
    assert "scheduler_beats_alive" in body


def test_the_reconciler_cadence_survives_a_clock_stepped_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    passes: list[object] = []
    real = __import__("scheduler_app.ticker", fromlist=["reconcile"]).reconcile

    def counted(now: object, **kwargs: object) -> object:
        passes.append(now)
        return real(now, **kwargs)

    monkeypatch.setattr("scheduler_app.ticker.reconcile", counted)
    clock = FakeClock(START)
    beat = ticker(MemoryPublisher(), clock, RECONCILE_INTERVAL=60.0)
    beat.tick()
    clock.advance(59)
    beat.tick()
    assert passes == []  # not at start, not before the interval
    clock.set(START - timedelta(hours=1))  # NTP steps the clock back an hour
    beat.tick()
    assert passes == [START - timedelta(hours=1)]  # runs, instead of waiting an hour


def test_every_beat_keeps_a_heartbeat_even_a_standby_without_the_sqlite_lease() -> None:
    from scheduler_app.monitoring.heartbeat import alive

    clock = FakeClock(START)
    first = ticker(MemoryPublisher(), clock, owner="beat-a").tick()
    second = ticker(MemoryPublisher(), clock, owner="beat-b").tick()
    assert first.leader and second.leader == (connection.vendor != "sqlite")
    assert alive(START, 60).count() == 2
