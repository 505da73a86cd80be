"""Migration from Celery's beat_schedule and from django-celery-beat's tables (raw SQL DDL)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from io import StringIO
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from celery import current_app
from celery.schedules import crontab, schedule, solar
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from scheduler_app.authoring.celery_beat_import import from_beat_schedule
from scheduler_app.authoring.celery_beat_migration import (
    MigrationPlan,
    apply_migration,
    plan_migration,
)
from scheduler_app.authoring.celery_beat_tables import from_django_celery_beat, has_periodic_tasks
from scheduler_app.authoring.celery_beat_values import EPOCH
from scheduler_app.clock import FakeClock
from scheduler_app.models import Schedule, ScheduleVersion
from tests.integration.support import START, TASK

pytestmark = pytest.mark.django_db


def sunrise(event: str = "sunrise") -> solar:
    """A ``solar`` entry without the optional ``ephem`` package: the importer only reads it."""
    entry = solar.__new__(solar)
    entry.event, entry.lat, entry.lon = event, 56.95, 24.1
    return entry


BEAT_SCHEDULE: dict[str, Any] = {
    "weekday-report": {
        "task": TASK,
        "schedule": crontab(minute=0, hour=8, day_of_week="mon-fri"),
        "kwargs": {"report": "daily"},
        "options": {"queue": "reports", "expires": 300},
    },
    "every-15m": {"task": TASK, "schedule": timedelta(minutes=15)},
    "every-minute": {"task": TASK, "schedule": schedule(run_every=60)},
    "riga-noon": {
        "task": TASK,
        "schedule": crontab(
            minute=0, hour=12, nowfun=lambda: datetime.now(ZoneInfo("Europe/Riga"))
        ),
    },
    "sunrise": {"task": TASK, "schedule": sunrise()},
    "positional": {"task": TASK, "schedule": 3600, "args": (1, (2, "x"))},
    "nautical": {"task": TASK, "schedule": sunrise("dawn_nautical")},
}


def by_key() -> dict[str, Schedule]:
    return {s.key or "": s for s in Schedule.objects.all()}


def migrate(mappings: Any, clock: FakeClock, **options: Any) -> MigrationPlan:
    return apply_migration(plan_migration(mappings, clock.now(), **options), clock=clock)


def test_beat_schedule_entries_map_to_schedules_or_are_refused_with_a_reason() -> None:
    clock = FakeClock(START)
    mappings = from_beat_schedule(BEAT_SCHEDULE, "Europe/Paris")
    migration = migrate(mappings, clock)
    stored = by_key()
    report = stored["celery-beat:weekday-report"]
    assert (report.kind, report.rule, report.timezone) == (
        "cron",
        "0 8 * * mon-fri",
        "Europe/Paris",
    )
    assert (report.kwargs, report.deadline, report.name) == (
        {"report": "daily"},
        300,
        "weekday-report",
    )
    every = stored["celery-beat:every-15m"]
    assert (every.kind, every.rule, every.anchor) == ("interval", "900", EPOCH)
    assert stored["celery-beat:every-minute"].rule == "60"
    assert stored["celery-beat:riga-noon"].timezone == "Europe/Riga"
    sun = stored["celery-beat:sunrise"]
    assert (sun.kind, sun.rule, sun.timezone) == ("solar", "sunrise 56.95 24.1", "Europe/Paris")
    assert stored["celery-beat:positional"].args == [1, [2, "x"]]  # as Celery's JSON sends it
    assert set(stored) == {
        "celery-beat:weekday-report",
        "celery-beat:every-15m",
        "celery-beat:every-minute",
        "celery-beat:riga-noon",
        "celery-beat:sunrise",
        "celery-beat:positional",
    }
    refused = migration.refused
    assert set(refused) == {"celery-beat:nautical"}
    assert "solar event 'dawn_nautical' has no equivalent" in refused["celery-beat:nautical"]
    [weekday] = [m for m in mappings if m.label == "celery-beat:weekday-report"]
    assert report.options == {"queue": "reports"}  # per-task routing is kept, not dropped
    assert not any("queue" in note for note in weekday.notes)


def test_routing_options_are_kept_and_anything_else_is_noted() -> None:
    entries = {
        "routed": {
            "task": TASK,
            "schedule": 3600,
            "options": {
                "queue": "io",
                "routing_key": "io.hourly",
                "exchange": "jobs",
                "priority": 7,
                "countdown": 5,
            },
        },
        "bad-priority": {"task": TASK, "schedule": 3600, "options": {"priority": 900}},
    }
    mappings = {m.label: m for m in from_beat_schedule(entries, "UTC")}
    migrate(mappings.values(), FakeClock(START))
    stored = by_key()
    assert stored["celery-beat:routed"].options == {
        "queue": "io",
        "routing_key": "io.hourly",
        "exchange": "jobs",
        "priority": 7,
    }
    assert [n[:35] for n in mappings["celery-beat:routed"].notes] == [
        "not carried over: countdown=5 (not "
    ]
    assert stored["celery-beat:bad-priority"].options == {}
    assert mappings["celery-beat:bad-priority"].notes == (
        "not carried over: priority=900 (must be 0-255)",
    )


def test_rerunning_the_beat_import_changes_nothing() -> None:
    clock = FakeClock(START)
    migrate(from_beat_schedule(BEAT_SCHEDULE, "UTC"), clock)
    before = {s.pk: (s.version, s.updated_at) for s in Schedule.objects.all()}
    clock.advance(timedelta(hours=3))
    again = migrate(from_beat_schedule(BEAT_SCHEDULE, "UTC"), clock)
    assert {c.action for c in again.plan.changes} == {"unchanged"}
    assert {s.pk: (s.version, s.updated_at) for s in Schedule.objects.all()} == before
    edited = {**BEAT_SCHEDULE, "every-15m": {"task": TASK, "schedule": timedelta(minutes=20)}}
    third = migrate(from_beat_schedule(edited, "UTC"), clock)
    assert third.plan.count("update") == 1
    assert by_key()["celery-beat:every-15m"].version == 2


def test_unknown_task_is_listed_not_imported() -> None:
    entries = {"ghost": {"task": "no.such.task", "schedule": crontab(minute=0)}}
    migration = migrate(from_beat_schedule(entries, "UTC"), FakeClock(START))
    assert migration.refused["celery-beat:ghost"].startswith("task: unknown task")
    assert "celery -A project" not in migration.refused["celery-beat:ghost"]
    assert not Schedule.objects.exists()


# -- django-celery-beat tables ---------------------------------------------------------------


def ddl() -> list[str]:
    dt = "timestamp with time zone" if connection.vendor == "postgresql" else "datetime"
    return [
        "CREATE TABLE django_celery_beat_crontabschedule (id integer PRIMARY KEY, "
        "minute varchar(240), hour varchar(96), day_of_week varchar(64), "
        "day_of_month varchar(124), month_of_year varchar(64), timezone varchar(63))",
        "CREATE TABLE django_celery_beat_intervalschedule (id integer PRIMARY KEY, "
        "every integer, period varchar(24))",
        "CREATE TABLE django_celery_beat_clockedschedule (id integer PRIMARY KEY, "
        f"clocked_time {dt})",
        "CREATE TABLE django_celery_beat_solarschedule (id integer PRIMARY KEY, "
        "event varchar(24), latitude decimal(9, 6), longitude decimal(9, 6))",
        "CREATE TABLE django_celery_beat_periodictask (id integer PRIMARY KEY, "
        "name varchar(200) UNIQUE, task varchar(200), args text, kwargs text, "
        "queue varchar(200) NULL, exchange varchar(200) NULL, routing_key varchar(200) NULL, "
        f"headers text, priority integer NULL, expires {dt} NULL, expire_seconds integer NULL, "
        f"one_off boolean, start_time {dt} NULL, enabled boolean, last_run_at {dt} NULL, "
        f"total_run_count integer, date_changed {dt}, description text, "
        "crontab_id integer NULL, interval_id integer NULL, solar_id integer NULL, "
        "clocked_id integer NULL)",
    ]


TASK_COLUMNS = (
    "id, name, task, args, kwargs, queue, exchange, routing_key, headers, priority, expires, "
    "expire_seconds, one_off, start_time, enabled, total_run_count, date_changed, description, "
    "crontab_id, interval_id, solar_id, clocked_id"
)


def periodic_task(
    cursor: Any, pk: int, name: str, *, task: str = TASK, args: str = "[]", **extra: Any
) -> None:
    row: dict[str, Any] = {
        "kwargs": "{}",
        "queue": None,
        "expires": None,
        "expire_seconds": None,
        "one_off": False,
        "start_time": None,
        "enabled": True,
        "crontab_id": None,
        "interval_id": None,
        "solar_id": None,
        "clocked_id": None,
        **extra,
    }
    cursor.execute(
        f"INSERT INTO django_celery_beat_periodictask ({TASK_COLUMNS}) VALUES "
        "(%s, %s, %s, %s, %s, %s, NULL, NULL, '{}', NULL, %s, %s, %s, %s, %s, 0, %s, '', "
        "%s, %s, %s, %s)",
        [
            pk, name, task, args, row["kwargs"], row["queue"], row["expires"],
            row["expire_seconds"], row["one_off"], row["start_time"], row["enabled"], START,
            row["crontab_id"], row["interval_id"], row["solar_id"], row["clocked_id"],
        ],
    )  # fmt: skip


FUTURE = START + timedelta(days=10)


@pytest.fixture
def beat_tables() -> Iterator[None]:
    with connection.cursor() as cursor:
        for statement in ddl():
            cursor.execute(statement)
        cursor.execute(
            "INSERT INTO django_celery_beat_crontabschedule VALUES "
            "(1, '30', '7', 'mon-fri', '*', '*', 'America/New_York')"
        )
        cursor.execute("INSERT INTO django_celery_beat_intervalschedule VALUES (1, 5, 'minutes')")
        cursor.execute("INSERT INTO django_celery_beat_clockedschedule VALUES (1, %s), (2, %s)",
                       [FUTURE, START - timedelta(days=1)])  # fmt: skip
        cursor.execute(
            "INSERT INTO django_celery_beat_solarschedule VALUES "
            "(1, 'dusk_civil', 56.9496, 24.1052), (2, 'dusk_nautical', 1, 2)"
        )
        periodic_task(cursor, 1, "ny-morning", crontab_id=1, kwargs='{"city": "NYC"}',
                      queue="slow", expire_seconds=120)  # fmt: skip
        periodic_task(cursor, 2, "five-minutes", interval_id=1, enabled=False)
        periodic_task(cursor, 3, "reminder", clocked_id=1, one_off=True)
        periodic_task(cursor, 4, "gone", clocked_id=2, one_off=True, enabled=False)
        periodic_task(cursor, 5, "dusk", solar_id=1)
        periodic_task(cursor, 6, "with-args", interval_id=1, args='[42, "eu"]')
        periodic_task(cursor, 9, "nautical", solar_id=2)
        periodic_task(cursor, 7, "ghost", task="no.such.task", crontab_id=1)
        periodic_task(cursor, 8, "once-at-start", interval_id=1, one_off=True,
                      start_time=FUTURE, expires=FUTURE + timedelta(days=30))  # fmt: skip
    yield


@pytest.mark.usefixtures("beat_tables")
def test_periodic_tasks_map_to_schedules() -> None:
    clock = FakeClock(START)
    migration = migrate(from_django_celery_beat(clock.now()), clock)
    stored = by_key()
    ny = stored["django-celery-beat:ny-morning"]
    assert (ny.kind, ny.rule, ny.timezone) == ("cron", "30 7 * * mon-fri", "America/New_York")
    assert (ny.kwargs, ny.deadline, ny.status) == ({"city": "NYC"}, 120, "active")
    five = stored["django-celery-beat:five-minutes"]
    assert (five.kind, five.rule, five.status) == ("interval", "300", "paused")
    reminder = stored["django-celery-beat:reminder"]
    assert (reminder.kind, reminder.rule) == ("once", FUTURE.isoformat().replace("+00:00", "Z"))
    once = stored["django-celery-beat:once-at-start"]
    assert (once.max_count, once.starts_at) == (1, FUTURE)
    assert once.ends_at == FUTURE + timedelta(days=30)
    dusk = stored["django-celery-beat:dusk"]
    assert (dusk.kind, dusk.rule, dusk.timezone) == ("solar", "dusk 56.9496 24.1052", "UTC")
    assert stored["django-celery-beat:with-args"].args == [42, "eu"]
    refused = migration.refused
    assert set(refused) == {
        "django-celery-beat:gone",
        "django-celery-beat:nautical",
        "django-celery-beat:ghost",
    }
    assert "no slot at or after now" in refused["django-celery-beat:gone"]
    assert "'dusk_nautical' has no equivalent" in refused["django-celery-beat:nautical"]
    assert "unknown task" in refused["django-celery-beat:ghost"]
    [ny_mapping] = [m for m in migration.mappings if m.label.endswith("ny-morning")]
    assert ny_mapping.notes == ()
    assert ny.options == {"queue": "slow"}


@pytest.mark.usefixtures("beat_tables")
def test_periodic_task_import_is_idempotent_and_follows_edits() -> None:
    clock = FakeClock(START)
    migrate(from_django_celery_beat(clock.now()), clock)
    versions = ScheduleVersion.objects.count()
    clock.advance(timedelta(hours=1))
    again = migrate(from_django_celery_beat(clock.now()), clock)
    assert {c.action for c in again.plan.changes} == {"unchanged"}
    assert ScheduleVersion.objects.count() == versions
    with connection.cursor() as cursor:
        cursor.execute("UPDATE django_celery_beat_crontabschedule SET hour = '9' WHERE id = 1")
        cursor.execute(
            "UPDATE django_celery_beat_periodictask SET enabled = %s WHERE id = 2", [True]
        )
    third = migrate(from_django_celery_beat(clock.now()), clock)
    assert third.plan.count("update") == 2
    stored = by_key()
    assert stored["django-celery-beat:ny-morning"].rule == "30 9 * * mon-fri"
    assert stored["django-celery-beat:five-minutes"].status == "active"


@pytest.mark.usefixtures("beat_tables")
def test_hostile_periodic_task_rows_are_refused_one_by_one() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO django_celery_beat_intervalschedule VALUES (2, 5, 'fortnights')"
        )
        periodic_task(cursor, 20, "args-not-a-list", interval_id=1, args="5")
        periodic_task(cursor, 21, "kwargs-a-list", interval_id=1, kwargs="[1, 2]")
        periodic_task(cursor, 22, "kwargs-deep", interval_id=1, kwargs="[" * 100_000)
        periodic_task(cursor, 23, "kwargs-nan", interval_id=1, kwargs='{"n": NaN}')
        periodic_task(cursor, 24, "odd-period", interval_id=2)
        periodic_task(cursor, 25, "dangling", crontab_id=99)
    clock = FakeClock(START)
    migration = migrate(from_django_celery_beat(clock.now()), clock)
    refused = {k.removeprefix("django-celery-beat:"): v for k, v in migration.refused.items()}
    assert "args must be a JSON list, got 5" in refused["args-not-a-list"]
    assert "kwargs must be a dict" in refused["kwargs-a-list"]
    assert "kwargs is not valid JSON" in refused["kwargs-deep"]
    assert "not valid JSON" in refused["kwargs-nan"]
    assert "unknown interval period 'fortnights'" in refused["odd-period"]
    assert "crontab_id=99 points at no row" in refused["dangling"]
    assert Schedule.objects.filter(key="django-celery-beat:ny-morning").exists()  # the others


def test_no_tables_no_rows() -> None:
    assert not has_periodic_tasks()
    assert from_django_celery_beat(START) == []


# -- the command -----------------------------------------------------------------------------


@pytest.fixture
def app_beat_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    entries = {k: BEAT_SCHEDULE[k] for k in ("weekday-report", "nautical")}
    monkeypatch.setitem(current_app.conf, "beat_schedule", entries)


def run(*args: str) -> tuple[str, str]:
    """The command's output; it exits 1 (CommandError) when entries were not imported."""
    out, err = StringIO(), StringIO()
    try:
        call_command("import_celery_beat", *args, stdout=out, stderr=err)
    except CommandError as exc:
        assert exc.returncode == 1
        err.write(f"CommandError: {exc}")
    return out.getvalue(), err.getvalue()


@pytest.mark.usefixtures("app_beat_schedule")
def test_command_dry_run_shows_the_refused_and_says_what_would_be_done() -> None:
    out, err = run("--dry-run")
    assert not Schedule.objects.exists()
    assert "celery-beat:nautical\n    from: solar(dawn_nautical" in out
    assert "NOT IMPORTED: solar event 'dawn_nautical' has no equivalent" in out
    assert "weekday-report" not in out  # imported cleanly: only listed with -v 2
    assert out.endswith(
        "dry run, nothing written: to create 1, to update 0, unchanged 0, not imported 1\n"
    )
    assert "1 of 2 entries not imported" in err


@pytest.mark.usefixtures("app_beat_schedule")
def test_command_exits_1_when_entries_are_refused_and_says_what_it_did() -> None:
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError) as refused:
        call_command("import_celery_beat", stdout=out, stderr=err)
    assert refused.value.returncode == 1
    assert out.getvalue().endswith("imported: created 1, updated 0, unchanged 0, not imported 1\n")
    assert Schedule.objects.count() == 1


def test_command_exits_0_and_lists_everything_with_verbosity_2(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(
        current_app.conf, "beat_schedule", {"hourly": {"task": TASK, "schedule": 3600}}
    )
    out = StringIO()
    call_command("import_celery_beat", "-v", "2", stdout=out)
    assert "celery-beat:hourly\n    from: " in out.getvalue()
    assert out.getvalue().endswith("imported: created 1, updated 0, unchanged 0, not imported 0\n")


@pytest.mark.usefixtures("app_beat_schedule")
def test_command_json_and_progress_bar() -> None:
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError):
        call_command("import_celery_beat", "--json", "--progress", stdout=out, stderr=err)
    document = json.loads(out.getvalue())
    assert document["applied"] is True
    assert document["counts"] == {"create": 1, "update": 0, "unchanged": 0, "refused": 1}
    refused = {e["key"]: e["refused"] for e in document["entries"]}
    assert refused["celery-beat:weekday-report"] is None
    assert "solar" in refused["celery-beat:nautical"]
    assert "importing: 100%" in err.getvalue() and "1/1" in err.getvalue()


@pytest.mark.usefixtures("app_beat_schedule")
def test_command_imports_in_shadow_mode_then_keeps_the_mode() -> None:
    run("--mode", "shadow")
    assert Schedule.objects.get().mode == "shadow"
    out, _ = run()
    assert "created 0, updated 0, unchanged 1" in out
    assert Schedule.objects.get().mode == "shadow"
    run("--mode", "live")
    stored = Schedule.objects.get()
    assert (stored.mode, stored.version) == ("live", 2)


def test_a_large_import_prints_its_summary_not_a_line_per_entry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entries = {f"job-{n:03}": {"task": TASK, "schedule": 3600 + n} for n in range(150)}
    monkeypatch.setitem(current_app.conf, "beat_schedule", entries)
    out, err = StringIO(), StringIO()
    call_command("import_celery_beat", "--progress", stdout=out, stderr=err)
    assert out.getvalue() == "imported: created 150, updated 0, unchanged 0, not imported 0\n"
    assert "150/150" in err.getvalue()  # the bar reached the end
    assert Schedule.objects.count() == 150
