"""Beat start-up: the banner's real max interval, refusing to start unmigrated, backing off
while the database is down (issue 13 and issue 14)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from celery.apps.beat import Beat
from celery.backends.base import DisabledBackend
from celery.beat import Service
from django.db import OperationalError
from django.test import override_settings

from project.celery import app as celery_app
from scheduler_app import beat as beat_module
from scheduler_app.beat import EXIT_NOT_MIGRATED, DurableScheduler, NotMigrated, backoff
from scheduler_app.clock import FakeClock
from scheduler_app.ticker import TickResult
from tests.integration.support import START, MemoryPublisher, ticker

REPO = Path(__file__).resolve().parents[2]
SCHEDULER = "scheduler_app.beat:DurableScheduler"


def banner(tmp_path: Path) -> str:
    service = Service(
        app=celery_app, scheduler_cls=SCHEDULER, schedule_filename=str(tmp_path / "s")
    )
    return Beat(app=celery_app, scheduler=SCHEDULER, quiet=True).startup_info(service)


def test_the_banner_shows_the_real_max_interval(tmp_path: Path) -> None:
    assert "maxinterval -> 5.00 seconds (5.0s)" in banner(tmp_path)
    with override_settings(SCHEDULER_MAX_INTERVAL=2.5):
        assert "maxinterval -> 2.50 seconds (2.5s)" in banner(tmp_path)


def test_backoff_doubles_up_to_thirty_seconds() -> None:
    assert [backoff(n) for n in range(1, 8)] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]


def scheduler(sleeps: list[float] | None = None) -> DurableScheduler:
    clock = FakeClock(START)
    sleep = (sleeps.append) if sleeps is not None else (lambda seconds: None)
    return DurableScheduler(
        app=celery_app,
        ticker=ticker(MemoryPublisher(), clock, SYNC_ON_BEAT_START=False),
        lazy=True,
        sleep=sleep,
    )


@pytest.mark.django_db
def test_a_migrated_database_starts(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "scheduler_app")
    assert beat_module.unapplied_migrations() == []
    scheduler().setup_schedule()
    assert [r.getMessage() for r in caplog.records] == [
        "durable scheduler ready, ticking at least every 5 s: owner=test-beat"
    ]


@pytest.mark.django_db
def test_a_migration_missing_from_the_database_is_found() -> None:
    """The quick check (file names against the migration table) hands a gap to Django's
    full plan, which names it."""
    from django.db.migrations.recorder import MigrationRecorder

    last = beat_module._migration_files()[-1]
    MigrationRecorder.Migration.objects.filter(app="scheduler_app", name=last).delete()
    assert beat_module.unapplied_migrations() == [f"scheduler_app.{last}"]


def test_missing_migrations_stop_the_beat_with_one_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(
        beat_module, "unapplied_migrations", lambda: ["scheduler_app.0001_initial", "x.0002"]
    )
    with pytest.raises(NotMigrated) as stopped:
        scheduler().setup_schedule()
    assert stopped.value.code == EXIT_NOT_MIGRATED
    (record,) = caplog.records
    assert record.levelno == logging.CRITICAL and record.exc_info is None
    assert "2 migration(s) missing, first scheduler_app.0001_initial" in record.getMessage()
    assert "run `python manage.py migrate`" in record.getMessage()


def test_a_database_that_is_down_at_start_is_waited_for_with_backoff(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    answers: list[Any] = [OperationalError("connection refused")] * 3 + [[]]

    def unapplied() -> list[str]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(beat_module, "unapplied_migrations", unapplied)
    monkeypatch.setattr(beat_module.connection, "close", lambda: None)
    sleeps: list[float] = []
    scheduler(sleeps).wait_for_database()
    assert sleeps == [1.0, 2.0, 4.0]
    waits = [r for r in caplog.records if getattr(r, "action", "") == "beat.db_unavailable"]
    assert len(waits) == 3 and all(r.exc_info is None for r in waits)
    assert "database unavailable (connection refused); retrying in 2 s" in waits[1].getMessage()


def test_a_tick_on_a_dead_database_backs_off_with_one_traceback(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    beat = scheduler()
    outcomes: list[Any] = [OperationalError("server closed the connection")] * 4
    outcomes.append(TickResult(created=0, published=0, sleep=5.0))

    def tick() -> TickResult:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    monkeypatch.setattr(beat.ticker, "tick", tick)
    monkeypatch.setattr(beat_module.connections, "close_old", lambda: None)
    monkeypatch.setattr(beat_module.connection, "close", lambda: None)
    assert [beat.tick() for _ in range(5)] == [1.0, 2.0, 4.0, 8.0, 5.0]
    failed = [r for r in caplog.records if getattr(r, "action", "") == "beat.tick_failed"]
    assert [bool(r.exc_info) for r in failed] == [True, False, False, False]
    assert any(getattr(r, "action", "") == "beat.db_recovered" for r in caplog.records)


def test_a_real_beat_on_an_empty_database_exits_with_one_line(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}",
        "PROJECT_VAR_DIR": str(tmp_path),
        "CELERY_BROKER_URL": "memory://",
        "PYTHONPATH": str(REPO),
    }
    celery = [sys.executable, "-m", "celery", "-A", "project", "beat", "--loglevel=INFO"]
    done = subprocess.run(
        [*celery, "-s", str(tmp_path / "beat-schedule")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == EXIT_NOT_MIGRATED, done.stderr[-2000:]
    output = done.stdout + done.stderr
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if "migrate" in line]
    assert len(lines) == 1 and "run `python manage.py migrate`" in lines[0], output[-2000:]
    assert "durable scheduler ready" not in output


class ExpiringBackend:
    """A result backend that cannot expire rows by itself (like django-celery-results)."""

    supports_autoexpire = False

    def __init__(self) -> None:
        self.cleanups = 0

    def cleanup(self) -> None:
        self.cleanups += 1


def test_expired_results_are_deleted_five_minutes_after_start_then_daily(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    backend = ExpiringBackend()
    monkeypatch.setattr(type(celery_app), "backend", property(lambda app: backend))
    clock = FakeClock(START)
    beat = DurableScheduler(
        app=celery_app, ticker=ticker(MemoryPublisher(), clock), lazy=True, sleep=lambda s: None
    )
    assert celery_app.conf.result_expires  # the example project keeps results 7 days
    ran = [beat.maybe_cleanup_results()]
    for minutes in (4, 1, 60, 23 * 60):
        clock.advance(timedelta(minutes=minutes))
        ran.append(beat.maybe_cleanup_results())
    assert ran == [False, False, True, False, True]
    assert backend.cleanups == 2
    assert [r.action for r in caplog.records if hasattr(r, "action")] == [
        "beat.results_cleanup",
        "beat.results_cleanup",
    ]


def test_no_cleanup_without_result_expires_or_with_a_self_expiring_backend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backend = ExpiringBackend()
    monkeypatch.setattr(type(celery_app), "backend", property(lambda app: backend))
    clock = FakeClock(START)
    beat = DurableScheduler(app=celery_app, ticker=ticker(MemoryPublisher(), clock), lazy=True)
    monkeypatch.setitem(celery_app.conf, "result_expires", None)
    clock.advance(timedelta(days=2))
    assert beat.maybe_cleanup_results() is False
    monkeypatch.setitem(celery_app.conf, "result_expires", timedelta(days=1))
    backend.supports_autoexpire = True  # e.g. Redis: keys expire by themselves
    assert beat.maybe_cleanup_results() is False
    assert backend.cleanups == 0
    disabled = DisabledBackend(app=celery_app)  # CELERY_RESULT_BACKEND = None
    monkeypatch.setattr(type(celery_app), "backend", property(lambda app: disabled))
    assert beat.maybe_cleanup_results() is False


def test_a_busy_tick_logs_one_readable_line_with_its_counts_and_duration(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "scheduler_app")
    beat = scheduler()
    monkeypatch.setattr(beat.ticker, "tick", lambda: TickResult(created=12, published=12, sleep=0))
    monkeypatch.setattr(beat_module.connections, "close_old", lambda: None)
    monkeypatch.setattr(beat, "maybe_cleanup_results", lambda: False)
    assert beat.tick() == 0
    (record,) = [r for r in caplog.records if getattr(r, "action", "") == "beat.tick"]
    assert isinstance(record.duration_ms, int) and record.duration_ms >= 0
    assert record.getMessage() == (
        f"tick: 12 occurrence(s) created, 12 published in {record.duration_ms} ms"
    )
