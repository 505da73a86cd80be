"""``sync_schedules``: declarations in code -> rows, by key, versioned, retired when removed."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from project.celery import app as celery_app
from project.demo.tasks import ping, record_context
from scheduler_app.authoring.declarations import ScheduleRegistry, isolated_registry, scheduled
from scheduler_app.authoring.sync import SyncReport, sync_schedules
from scheduler_app.beat import DurableScheduler
from scheduler_app.clock import FakeClock
from scheduler_app.models import (
    Occurrence,
    Schedule,
    ScheduleOrigin,
    ScheduleStatus,
    ScheduleVersion,
)
from scheduler_app.services import pause_schedule
from tests.integration.support import START, MemoryPublisher, reload, rows, schedule, ticker

pytestmark = pytest.mark.django_db
PARIS = ZoneInfo("Europe/Paris")


@pytest.fixture
def declared() -> Iterator[ScheduleRegistry]:
    celery_app.loader.import_default_modules()  # before isolating: see isolated_registry()
    with isolated_registry() as fresh:
        yield fresh


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


def declare_briefings() -> None:
    scheduled(cron="0 8 * * MON-FRI", timezone="Europe/Paris", objective="daily")(record_context)
    scheduled(cron="0 9 * * MON", timezone="Europe/Paris", objective="weekly")(record_context)


def sync(clock: FakeClock, registry: ScheduleRegistry, **options: Any) -> SyncReport:
    return sync_schedules(clock=clock, declarations=registry, **options)


def actions(report: SyncReport) -> dict[str, str]:
    return {entry.key: entry.action for entry in report.entries}


def stored(key: str) -> Schedule:
    return Schedule.objects.get(key=key)


# -- adds -----------------------------------------------------------------------------------


def test_declarations_are_created_as_code_schedules(
    declared: ScheduleRegistry, clock: FakeClock
) -> None:
    declare_briefings()
    scheduled(every="1h", misfire="fire_once", expect_success_every="3h", kwargs={"what": "sync"})(
        ping
    )
    report = sync(clock, declared)
    assert actions(report) == {
        "demo.record_context:daily": "create",
        "demo.record_context:weekly": "create",
        "demo.ping:default": "create",
    }
    daily = stored("demo.record_context:daily")
    assert (daily.origin, daily.version, daily.status) == ("code", 1, "active")
    assert (daily.task, daily.objective, daily.timezone) == (
        "demo.record_context",
        "daily",
        "Europe/Paris",
    )
    # START is Monday 00:00:10 UTC: the first weekday 08:00 in Paris is 07:00 UTC that day.
    assert daily.next_run_at == datetime(2026, 1, 5, 7, tzinfo=UTC)
    hourly = stored("demo.ping:default")
    assert (hourly.kind, hourly.rule, hourly.misfire_policy) == ("interval", "3600", "fire_once")
    assert (hourly.expected_every, hourly.kwargs) == (10800, {"what": "sync"})
    assert hourly.anchor == START.replace(microsecond=0)  # the first sync picked it
    assert report.ok and report.summary().startswith("3 created, 0 updated, 0 unchanged")


# -- no change: no new version ----------------------------------------------------------------


def test_a_second_sync_changes_nothing(declared: ScheduleRegistry, clock: FakeClock) -> None:
    declare_briefings()
    scheduled(every="15m")(ping)
    sync(clock, declared)
    before = {row.key: (row.version, row.updated_at) for row in Schedule.objects.all()}
    clock.advance(timedelta(hours=3))
    report = sync(clock, declared)
    assert set(actions(report).values()) == {"unchanged"}
    assert {row.key: (row.version, row.updated_at) for row in Schedule.objects.all()} == before
    assert ScheduleVersion.objects.count() == 3


SAME_THING_WRITTEN_TWICE: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({"every": "15m"}, {"every": 900}),
    ({"every": timedelta(hours=1)}, {"every": "PT1H"}),
    (
        {"every": "1h", "anchor": datetime(2026, 1, 1, 9, tzinfo=PARIS)},
        {"every": "1h", "anchor": datetime(2026, 1, 1, 8, tzinfo=UTC)},
    ),
    (
        {"at": datetime(2026, 2, 1, 9, tzinfo=PARIS)},
        {"at": datetime(2026, 2, 1, 8, tzinfo=UTC)},
    ),
    (
        {"rrule": "FREQ=DAILY;BYHOUR=9;BYMINUTE=0", "anchor": datetime(2026, 1, 1, tzinfo=UTC)},
        {"rrule": " FREQ=DAILY;BYHOUR=9;BYMINUTE=0 ", "anchor": datetime(2026, 1, 1, tzinfo=UTC)},
    ),
    (
        {"cron": "0 8 * * *", "max_lateness": "2m", "deadline": timedelta(hours=1)},
        {"cron": "0 8 * * *", "max_lateness": 120, "deadline": "1h"},
    ),
    (
        {"cron": "0 8 * * *", "starts_at": datetime(2026, 1, 1, 1, tzinfo=PARIS)},
        {"cron": "0 8 * * *", "starts_at": datetime(2026, 1, 1, 0, tzinfo=UTC)},
    ),
    ({"cron": "0 8 * * *", "misfire": "catch_up"}, {"cron": "0 8 * * *"}),  # the default
    (
        {"cron": "0 8 * * *", "kwargs": {"a": 1, "b": [1, 2]}},
        {"cron": "0 8 * * *", "kwargs": {"b": (1, 2), "a": 1}},
    ),
]


@pytest.mark.parametrize(("first", "second"), SAME_THING_WRITTEN_TWICE)
def test_equal_definitions_written_differently_are_unchanged(
    first: dict[str, Any], second: dict[str, Any], clock: FakeClock
) -> None:
    with isolated_registry() as one:
        scheduled(**first)(ping)
    with isolated_registry() as other:
        scheduled(**second)(ping)
    sync(clock, one)
    clock.advance(60)
    report = sync(clock, other)
    assert actions(report) == {"demo.ping:default": "unchanged"}, report.entries
    assert stored("demo.ping:default").version == 1


# -- changes: a new version -------------------------------------------------------------------


def test_a_changed_declaration_makes_a_new_version(clock: FakeClock) -> None:
    with isolated_registry() as before:
        scheduled(cron="0 8 * * MON-FRI", timezone="Europe/Paris", misfire="skip")(ping)
    with isolated_registry() as after:
        scheduled(cron="30 8 * * MON-FRI", timezone="Europe/Paris")(ping)
    sync(clock, before)
    report = sync(clock, after)
    [entry] = report.entries
    assert (entry.action, entry.version) == ("update", 2)
    assert entry.detail == "changed misfire_policy, rule"  # misfire back to the default
    row = stored("demo.ping:default")
    assert (row.version, row.rule, row.misfire_policy) == (2, "30 8 * * MON-FRI", "catch_up")
    assert row.next_run_at == datetime(2026, 1, 5, 7, 30, tzinfo=UTC)
    snapshots = ScheduleVersion.objects.filter(schedule=row).order_by("version")
    assert [(s.version, s.definition["rule"]) for s in snapshots] == [
        (1, "0 8 * * MON-FRI"),
        (2, "30 8 * * MON-FRI"),
    ]


def test_changing_only_the_monitoring_interval_is_a_change(clock: FakeClock) -> None:
    with isolated_registry() as before:
        scheduled(cron="0 8 * * *", expect_success_every="26h")(ping)
    with isolated_registry() as after:
        scheduled(cron="0 8 * * *", expect_success_every="50h")(ping)
    sync(clock, before)
    assert actions(sync(clock, after)) == {"demo.ping:default": "update"}
    assert stored("demo.ping:default").expected_every == 50 * 3600


# -- removals: retired, history kept ------------------------------------------------------------


def test_a_removed_declaration_is_retired_with_its_history(clock: FakeClock) -> None:
    with isolated_registry() as before:
        scheduled(every="1h", anchor=START.replace(minute=0, second=0))(ping)
        declare_briefings()
    sync(clock, before)
    publisher = MemoryPublisher()
    clock.advance(timedelta(hours=2))
    ticker(publisher, clock).tick()
    hourly = stored("demo.ping:default")
    history = [row.id for row in rows(hourly)]
    assert len(history) >= 2
    with isolated_registry() as after:
        declare_briefings()
    report = sync(clock, after)
    assert actions(report)["demo.ping:default"] == "retire"
    hourly = reload(hourly)
    assert (hourly.status, hourly.next_run_at) == ("cancelled", None)
    assert [row.id for row in rows(hourly)] == history  # the history is kept
    clock.advance(timedelta(hours=2))
    ticker(publisher, clock).tick()
    assert Occurrence.objects.filter(schedule=hourly).count() == len(history)
    # Retired once: the next sync does not mention it again.
    assert "demo.ping:default" not in actions(sync(clock, after))


def test_a_retired_key_declared_again_gets_a_new_schedule(clock: FakeClock) -> None:
    with isolated_registry() as declared:
        scheduled(cron="0 8 * * *")(ping)
    sync(clock, declared)
    old = stored("demo.ping:default")
    with isolated_registry() as empty:
        sync(clock, empty)
    report = sync(clock, declared)
    assert actions(report) == {"demo.ping:default": "create"}
    new = stored("demo.ping:default")
    assert new.id != old.id and new.status == "active"
    old = reload(old)
    assert old.status == "cancelled"
    assert old.key == f"demo.ping:default~retired~{old.id.hex[:12]}"


def test_schedules_not_declared_in_code_are_never_touched(
    declared: ScheduleRegistry, clock: FakeClock
) -> None:
    api = schedule(clock, key="made-in-admin", kind="cron", rule="0 * * * *")
    sync(clock, declared)
    assert reload(api).status == "active"
    assert reload(api).origin == ScheduleOrigin.API


def test_a_key_owned_by_an_api_schedule_is_an_error_and_others_still_sync(
    declared: ScheduleRegistry, clock: FakeClock
) -> None:
    api = schedule(clock, key="demo.ping:default", kind="cron", rule="0 * * * *")
    scheduled(cron="0 8 * * *")(ping)
    declare_briefings()
    report = sync(clock, declared)
    assert actions(report) == {
        "demo.ping:default": "error",
        "demo.record_context:daily": "create",
        "demo.record_context:weekly": "create",
    }
    [error] = report.errors
    assert "not declared in code" in error.detail and str(api.id) in error.detail
    assert reload(api).rule == "0 * * * *"


def test_an_unknown_task_is_reported_not_raised(
    declared: ScheduleRegistry, clock: FakeClock
) -> None:
    @scheduled(cron="0 8 * * *")
    @celery_app.task(name="tests.not_registered_anywhere", lazy=False)
    def ghost() -> None: ...

    celery_app.tasks.unregister("tests.not_registered_anywhere")
    report = sync(clock, declared)
    [entry] = report.entries
    assert entry.action == "error" and "unknown task" in entry.detail
    assert not report.ok


# -- paused stays paused ------------------------------------------------------------------------


def test_a_paused_code_schedule_stays_paused(clock: FakeClock) -> None:
    with isolated_registry() as before:
        scheduled(cron="0 8 * * *")(ping)
    with isolated_registry() as after:
        scheduled(cron="0 9 * * *")(ping)
    sync(clock, before)
    pause_schedule(stored("demo.ping:default").id, clock=clock)
    assert actions(sync(clock, before)) == {"demo.ping:default": "unchanged"}
    assert stored("demo.ping:default").status == ScheduleStatus.PAUSED
    sync(clock, after)
    row = stored("demo.ping:default")
    assert (row.status, row.version, row.rule) == ("paused", 2, "0 9 * * *")


# -- dry run ------------------------------------------------------------------------------------


def test_dry_run_writes_nothing_and_reports_the_same_actions(clock: FakeClock) -> None:
    with isolated_registry() as before:
        scheduled(cron="0 8 * * *", objective="changed")(ping)
        scheduled(cron="0 8 * * *", objective="removed")(ping)
        scheduled(cron="0 8 * * *", objective="kept")(ping)
    with isolated_registry() as after:
        scheduled(cron="0 9 * * *", objective="changed")(ping)
        scheduled(cron="0 8 * * *", objective="kept")(ping)
        scheduled(cron="0 8 * * *", objective="added")(ping)
    sync(clock, before)
    snapshot = list(Schedule.objects.order_by("key").values())
    versions = ScheduleVersion.objects.count()
    dry = sync(clock, after, dry_run=True)
    assert list(Schedule.objects.order_by("key").values()) == snapshot
    assert ScheduleVersion.objects.count() == versions
    assert dry.dry_run and dry.summary().endswith("(dry run: nothing written)")
    real = sync(clock, after)
    assert (
        actions(dry)
        == actions(real)
        == {
            "demo.ping:added": "create",
            "demo.ping:changed": "update",
            "demo.ping:kept": "unchanged",
            "demo.ping:removed": "retire",
        }
    )
    assert [e.version for e in dry.entries] == [e.version for e in real.entries]


def test_dry_run_reports_what_would_fail(clock: FakeClock) -> None:
    with isolated_registry() as declared:
        scheduled(at=START - timedelta(days=1))(ping)
    report = sync(clock, declared, dry_run=True)
    [entry] = report.entries
    assert entry.action == "error" and "no slot at or after now" in entry.detail
    assert not Schedule.objects.exists()


# -- the command and the beat ------------------------------------------------------------------


def test_the_command_prints_one_line_per_schedule(declared: ScheduleRegistry) -> None:
    declare_briefings()
    out = StringIO()
    call_command("sync_schedules", "--dry-run", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("create    demo.record_context:daily (demo.record_context)")
    assert lines[1].startswith("create    demo.record_context:weekly")
    assert lines[-1] == "2 created, 0 updated, 0 unchanged, 0 retired, 0 failed " + (
        "(dry run: nothing written)"
    )
    assert not Schedule.objects.exists()
    call_command("sync_schedules", stdout=StringIO())
    out = StringIO()
    call_command("sync_schedules", stdout=out)
    daily = stored("demo.record_context:daily")
    assert out.getvalue().splitlines()[0] == (
        f"unchanged demo.record_context:daily (demo.record_context) {daily.id} v1"
    )


def test_the_command_fails_when_a_declaration_cannot_be_synced(
    declared: ScheduleRegistry, clock: FakeClock
) -> None:
    schedule(clock, key="demo.ping:default", kind="cron", rule="0 * * * *")
    scheduled(cron="0 8 * * *")(ping)
    out = StringIO()
    with pytest.raises(CommandError, match="1 declaration"):
        call_command("sync_schedules", stdout=out)
    assert out.getvalue().startswith("error     demo.ping:default (demo.ping)")


def test_the_beat_syncs_at_start(declared: ScheduleRegistry, clock: FakeClock) -> None:
    declare_briefings()
    beat = DurableScheduler(app=celery_app, ticker=ticker(MemoryPublisher(), clock), lazy=True)
    beat.setup_schedule()
    assert Schedule.objects.filter(origin="code").count() == 2


def test_the_beat_starts_when_the_sync_fails(
    declared: ScheduleRegistry,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(**options: Any) -> SyncReport:
        raise ImportError("a task module is broken")

    monkeypatch.setattr("scheduler_app.beat.sync_schedules", broken)
    beat = DurableScheduler(app=celery_app, ticker=ticker(MemoryPublisher(), clock), lazy=True)
    beat.setup_schedule()
    [record] = [r for r in caplog.records if getattr(r, "action", "") == "beat.sync_failed"]
    assert record.levelname == "ERROR" and "a task module is broken" in (record.exc_text or "")
    assert beat.max_interval == 5  # setup finished after the failed sync
