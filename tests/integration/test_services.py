"""The service layer: create, update, pause, preview/resume, cancel, delete (fake clock)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pytest_django.fixtures import Settings as SettingsWrapper

from scheduler_app.clock import FakeClock, SystemClock
from scheduler_app.definition.schedule import version_id
from scheduler_app.errors import ScheduleStateError, ScheduleValidationError, StaleVersion
from scheduler_app.models import (
    Occurrence,
    OccurrenceState,
    Schedule,
    ScheduleStatus,
    ScheduleVersion,
    Trigger,
)
from scheduler_app.services import (
    cancel_schedule,
    create_schedule,
    delete_schedule,
    pause_schedule,
    preview_resume,
    resume_schedule,
    update_schedule,
)
from tests.integration.support import START, MemoryPublisher, reload, rows, schedule, ticker

pytestmark = pytest.mark.django_db
HOURLY = {"kind": "cron", "rule": "0 * * * *"}


def at(hour: int, minute: int = 0, second: int = 0, day: int = 5) -> datetime:
    return datetime(2026, 1, day, hour, minute, second, tzinfo=UTC)


# -- create ---------------------------------------------------------------------------------


def test_create_stores_version_one_and_its_snapshot() -> None:
    clock = FakeClock(START)
    created = schedule(clock, name="hourly", kwargs={"n": 1}, **HOURLY)
    stored = reload(created)
    assert (stored.version, stored.status, stored.next_run_at) == (1, "active", at(1))
    [snapshot] = ScheduleVersion.objects.filter(schedule=created)
    assert snapshot.id == version_id(created.id, 1)
    assert snapshot.definition["rule"] == "0 * * * *"
    assert snapshot.definition["kwargs"] == {"n": 1}


BAD_INPUT: list[tuple[dict[str, Any], str, str | None]] = [
    ({"task": "no.such.task", **HOURLY}, "task", "unknown_task"),
    ({"kind": "cron", "rule": "61 * * * *"}, "cron.minute", None),
    ({"kind": "rrule", "rule": "FREQ=SOMETIMES"}, "rrule.FREQ", None),
    ({"kind": "weekly", "rule": "x"}, "kind", None),
    ({**HOURLY, "timezone": "Mars/Olympus_Mons"}, "timezone", "unknown_timezone"),
    ({**HOURLY, "starts_at": datetime(2026, 2, 1)}, "starts_at", "naive_datetime"),
    ({**HOURLY, "misfire_policy": "sometimes"}, "misfire_policy", "invalid_choice"),
    ({**HOURLY, "overlap_policy": "queue"}, "overlap_policy", "invalid_choice"),
    ({**HOURLY, "max_lateness": -1}, "max_lateness", None),
    ({**HOURLY, "catch_up_limit": 0}, "catch_up_limit", None),
    ({**HOURLY, "kwargs": ["not", "a", "dict"]}, "kwargs", None),
    ({**HOURLY, "colour": "blue"}, "colour", "unknown_field"),
    ({"kind": "once", "rule": "2025-01-01T00:00:00Z"}, "rule", "no_future_slot"),
    ({"kind": "cron"}, "rule", "required"),
]


@pytest.mark.parametrize(("fields", "field", "code"), BAD_INPUT)
def test_bad_input_is_a_validation_error_and_stores_nothing(
    fields: dict[str, Any], field: str, code: str | None
) -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(FakeClock(START), **fields)
    assert caught.value.field == field
    if code is not None:
        assert caught.value.code == code
    assert str(caught.value)
    assert not Schedule.objects.exists()
    assert not ScheduleVersion.objects.exists()


def test_oversized_payload(settings: SettingsWrapper) -> None:
    settings.SCHEDULER_MAX_PAYLOAD_BYTES = 64
    schedule(FakeClock(START), kwargs={"x": "a" * 40}, **HOURLY)
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(FakeClock(START), kwargs={"x": "a" * 80}, **HOURLY)
    assert (caught.value.field, caught.value.code) == ("kwargs", "payload_too_large")
    assert Schedule.objects.count() == 1


def test_interval_below_the_minimum(settings: SettingsWrapper) -> None:
    clock = FakeClock(START)
    schedule(clock, kind="interval", rule="30")  # accepted under the default minimum (10 s)
    settings.SCHEDULER_MIN_INTERVAL = 60
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(clock, kind="interval", rule="30")  # the same definition, now too frequent
    assert (caught.value.field, caught.value.code) == ("rule", "too_frequent")
    schedule(clock, kind="interval", rule="60")
    assert Schedule.objects.count() == 2


def test_unknown_task_accepted_when_names_are_not_validated(settings: SettingsWrapper) -> None:
    settings.SCHEDULER_VALIDATE_TASK_NAMES = False
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(FakeClock(START), task="elsewhere.task", **HOURLY)  # not allow-listed
    assert caught.value.code == "forbidden_task"
    settings.SCHEDULER_ALLOWED_TASKS = ("elsewhere.*",)
    created = schedule(FakeClock(START), task="elsewhere.task", **HOURLY)
    assert reload(created).task == "elsewhere.task"


# -- update ---------------------------------------------------------------------------------


def test_semantic_edit_makes_a_version_and_old_occurrences_keep_theirs() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    target = schedule(clock, kwargs={"n": 1}, **HOURLY)
    beat = ticker(broker, clock)
    clock.set(at(1, 0, 5))
    beat.tick()
    clock.set(at(1, 31))
    update_schedule(
        target.id, expected_version=1, clock=clock, kwargs={"n": 2}, rule="*/20 * * * *"
    )
    stored = reload(target)
    assert (stored.version, stored.next_run_at) == (2, at(1, 40))
    snapshots = {v.version: v.definition for v in ScheduleVersion.objects.filter(schedule=target)}
    assert snapshots[1]["kwargs"] == {"n": 1}
    assert snapshots[2]["kwargs"] == {"n": 2}
    assert snapshots[2]["rule"] == "*/20 * * * *"
    clock.set(at(1, 40, 1))
    beat.tick()
    found = [(r.scheduled_for, r.schedule_version.version, r.kwargs) for r in rows(target)]
    assert found == [(at(1), 1, {"n": 1}), (at(1, 40), 2, {"n": 2})]


def test_unchanged_edits_keep_the_version_and_a_rename_is_versioned() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kwargs={"n": 1}, **HOURLY)
    clock.advance(600)
    update_schedule(target.id, expected_version=1, clock=clock, kwargs={"n": 1}, name="")
    assert (reload(target).version, ScheduleVersion.objects.filter(schedule=target).count()) == (
        1,
        1,
    )
    update_schedule(target.id, expected_version=1, clock=clock, name="renamed", kwargs={"n": 1})
    stored = reload(target)
    # A rename is a new version (covered by the version check) but not a new timing.
    assert (stored.name, stored.version, stored.next_run_at) == ("renamed", 2, at(1))
    assert ScheduleVersion.objects.get(schedule=target, version=2).definition["name"] == "renamed"
    with pytest.raises(StaleVersion):
        update_schedule(target.id, expected_version=1, clock=clock, name="lost update")


def test_a_stale_edit_fails_and_writes_nothing() -> None:
    clock = FakeClock(START)
    target = schedule(clock, **HOURLY)
    update_schedule(target.id, expected_version=1, clock=clock, rule="30 * * * *")
    with pytest.raises(StaleVersion, match="version 2"):
        update_schedule(target.id, expected_version=1, clock=clock, rule="15 * * * *")
    stored = reload(target)
    assert (stored.version, stored.rule) == (2, "30 * * * *")


def test_an_invalid_edit_writes_nothing() -> None:
    clock = FakeClock(START)
    target = schedule(clock, **HOURLY)
    with pytest.raises(ScheduleValidationError) as caught:
        update_schedule(target.id, expected_version=1, clock=clock, timezone="Nowhere/Town")
    assert caught.value.field == "timezone"
    stored = reload(target)
    assert (stored.version, stored.timezone) == (1, "UTC")
    assert ScheduleVersion.objects.filter(schedule=target).count() == 1


def test_a_timezone_change_mid_run() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="cron", rule="0 9 * * *")
    beat = ticker(MemoryPublisher(), clock)
    clock.set(at(9, 0, 1))
    beat.tick()
    clock.set(at(10))
    update_schedule(target.id, expected_version=1, clock=clock, timezone="Asia/Tokyo")
    tokyo_nine = at(0, day=6)  # 09:00 in Tokyo (UTC+9) on Jan 6
    assert reload(target).next_run_at == tokyo_nine
    clock.set(tokyo_nine + timedelta(seconds=1))
    beat.tick()
    found = [(r.scheduled_for, r.timezone, r.schedule_version.version) for r in rows(target)]
    assert found == [(at(9), "UTC", 1), (tokyo_nine, "Asia/Tokyo", 2)]


def test_an_edit_while_slots_are_due_runs_them_under_the_old_version() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kwargs={"v": "old"}, **HOURLY)
    clock.set(at(3, 0, 30))  # 01:00 and 02:00 are late, 03:00 on time; no tick ran
    update_schedule(target.id, expected_version=1, clock=clock, kwargs={"v": "new"})
    found = [
        (r.scheduled_for, r.trigger, r.schedule_version.version, r.kwargs) for r in rows(target)
    ]
    assert found == [
        (at(1), Trigger.CATCH_UP, 1, {"v": "old"}),
        (at(2), Trigger.CATCH_UP, 1, {"v": "old"}),
        (at(3), Trigger.SCHEDULED, 1, {"v": "old"}),
    ]
    stored = reload(target)
    assert (stored.version, stored.status, stored.next_run_at) == (2, "active", at(4))
    clock.set(at(4, 0, 1))
    ticker(MemoryPublisher(), clock).tick()
    assert rows(target)[-1].kwargs == {"v": "new"}


def test_editing_a_cancelled_schedule_is_refused() -> None:
    clock = FakeClock(START)
    target = schedule(clock, **HOURLY)
    cancel_schedule(target.id, clock=clock)
    with pytest.raises(ScheduleStateError):
        update_schedule(target.id, expected_version=1, clock=clock, rule="5 * * * *")


# -- pause, preview, resume -----------------------------------------------------------------


def _with_one_pending(on_pause: str) -> tuple[FakeClock, Schedule]:
    """A schedule whose 01:00 occurrence is in the outbox (the broker is down)."""
    clock, broker = FakeClock(START), MemoryPublisher()
    target = schedule(clock, on_pause=on_pause, **HOURLY)
    broker.down = True
    clock.set(at(1, 0, 1))
    ticker(broker, clock).tick()
    assert [r.state for r in rows(target)] == [OccurrenceState.PENDING]
    return clock, target


@pytest.mark.parametrize(
    ("on_pause", "state", "reason"),
    [("keep", OccurrenceState.PENDING, ""), ("cancel", OccurrenceState.CANCELLED, "paused")],
)
def test_pause_keeps_or_cancels_waiting_occurrences(on_pause: str, state: str, reason: str) -> None:
    clock, target = _with_one_pending(on_pause)
    paused = pause_schedule(target.id, clock=clock)
    assert (paused.status, paused.paused_at) == (ScheduleStatus.PAUSED, clock.now())
    [row] = rows(target)
    assert (row.state, row.reason) == (state, reason)
    clock.set(at(5, 0, 1))
    assert ticker(MemoryPublisher(), clock).tick().created == 0
    assert len(rows(target)) == 1


@pytest.mark.parametrize(
    ("policy", "emitted", "skipped"),
    [
        ("catch_up", [at(h) for h in (2, 3, 4, 5, 6)], 0),
        ("fire_once", [at(6)], 4),
        ("skip", [], 5),
    ],
)
def test_preview_then_resume_applies_the_misfire_policy(
    policy: str, emitted: list[datetime], skipped: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock(START)
    target = schedule(clock, misfire_policy=policy, **HOURLY)
    clock.set(at(1, 0, 1))
    ticker(MemoryPublisher(), clock).tick()
    pause_schedule(target.id, clock=clock)
    clock.set(at(6, 30))
    before = reload(target)
    preview = preview_resume(before, clock.now())
    with monkeypatch.context() as patch:  # without ``now``: the system clock's
        patch.setattr(SystemClock, "now", lambda self: clock.now())
        assert preview_resume(before) == preview
    assert [p.scheduled_for for p in preview.emit] == emitted
    assert all(p.catch_up for p in preview.emit)
    assert (preview.count, preview.skipped, preview.next_run_at) == (len(emitted), skipped, at(7))
    assert len(rows(target)) == 1  # a question writes nothing
    assert reload(target).updated_at == before.updated_at

    resumed = resume_schedule(target.id, clock=clock)
    assert (resumed.status, resumed.next_run_at) == (ScheduleStatus.ACTIVE, at(7))
    later = rows(target)[1:]
    assert [(r.scheduled_for, r.trigger) for r in later] == [(s, Trigger.CATCH_UP) for s in emitted]
    stored = reload(target)
    assert (stored.missed_count, stored.skipped_count, stored.caught_up_count) == (
        5,
        skipped,
        len(emitted),
    )


def test_resume_before_the_next_slot_creates_nothing() -> None:
    clock = FakeClock(START)
    target = schedule(clock, **HOURLY)
    pause_schedule(target.id, clock=clock)
    clock.advance(60)
    assert preview_resume(reload(target), clock.now()).count == 0
    resumed = resume_schedule(target.id, clock=clock)
    assert (resumed.status, resumed.next_run_at) == ("active", at(1))
    assert not Occurrence.objects.exists()


# -- cancel, delete -------------------------------------------------------------------------


def test_cancel_keeps_history_and_stops_future_occurrences() -> None:
    clock, target = _with_one_pending("keep")
    clock.set(at(2, 0, 30))  # the 02:00 slot is due but not materialized
    cancelled = cancel_schedule(target.id, clock=clock)
    assert (cancelled.status, cancelled.next_run_at) == (ScheduleStatus.CANCELLED, None)
    [row] = rows(target)
    assert (row.state, row.reason) == (OccurrenceState.CANCELLED, "schedule_cancelled")
    clock.advance(timedelta(days=2))
    assert ticker(MemoryPublisher(), clock).tick().created == 0
    assert len(rows(target)) == 1
    with pytest.raises(ScheduleStateError):
        resume_schedule(target.id, clock=clock)


def test_delete_without_history_deletes() -> None:
    clock = FakeClock(START)
    target = schedule(clock, **HOURLY)
    assert delete_schedule(target.id, clock=clock) == "deleted"
    assert not Schedule.objects.exists()
    assert not ScheduleVersion.objects.exists()


def test_delete_with_history_cancels_instead() -> None:
    clock, target = _with_one_pending("keep")
    assert delete_schedule(target.id, clock=clock) == "cancelled"
    assert reload(target).status == ScheduleStatus.CANCELLED
    assert len(rows(target)) == 1


def test_an_rrule_without_anchor_takes_no_seconds_from_the_moment_of_creation() -> None:
    clock = FakeClock(datetime(2026, 12, 1, 16, 41, 43, 250_000, tzinfo=UTC))
    schedule = create_schedule(
        clock=clock, task="demo.ping", kind="rrule", rule="FREQ=DAILY;BYHOUR=17;BYMINUTE=0"
    )
    assert schedule.anchor == datetime(2026, 12, 1, 16, 41, tzinfo=UTC)
    assert schedule.next_run_at == datetime(2026, 12, 1, 17, 0, tzinfo=UTC)
