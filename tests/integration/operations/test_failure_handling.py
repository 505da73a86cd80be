"""pause_after_failures and archive_on_completion, driven by occurrence_finished."""

from __future__ import annotations

from datetime import timedelta

import pytest

from scheduler_app.clock import FakeClock
from scheduler_app.models import OccurrenceState, ScheduleStatus
from tests.integration.operations.helpers import finish, run_due
from tests.integration.support import START, reload, schedule

pytestmark = pytest.mark.django_db
FAILED, SUCCEEDED = OccurrenceState.FAILED, OccurrenceState.SUCCEEDED


def test_three_consecutive_failures_pause_the_schedule_with_a_note() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60s", pause_after_failures=3)
    for attempt in range(3):
        clock.set(START + timedelta(minutes=attempt))
        occurrence = run_due(target, clock)[-1]
        finish(occurrence, FAILED, clock.now(), f"Traceback\nValueError: bad row {attempt}")
    stored = reload(target)
    assert stored.status == ScheduleStatus.PAUSED
    assert stored.consecutive_failures == 3
    assert stored.paused_by == "scheduler"
    assert stored.pause_note == (
        f"paused after 3 consecutive failures; last: occurrence {occurrence.pk}: "
        "ValueError: bad row 2"
    )


def test_a_success_resets_the_count() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60s", pause_after_failures=2)
    outcomes = [FAILED, SUCCEEDED, FAILED]
    for minute, outcome in enumerate(outcomes):
        clock.set(START + timedelta(minutes=minute))
        finish(run_due(target, clock)[-1], outcome, clock.now(), "boom")
    stored = reload(target)
    assert (stored.status, stored.consecutive_failures) == (ScheduleStatus.ACTIVE, 1)


def test_without_the_setting_failures_are_counted_but_nothing_pauses() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60s")
    for minute in range(4):
        clock.set(START + timedelta(minutes=minute))
        finish(run_due(target, clock)[-1], FAILED, clock.now(), "boom")
    stored = reload(target)
    assert (stored.status, stored.consecutive_failures) == (ScheduleStatus.ACTIVE, 4)


def test_a_one_time_schedule_is_archived_once_its_run_ended() -> None:
    clock = FakeClock(START)
    at = START + timedelta(minutes=5)
    target = schedule(clock, kind="once", rule=at.isoformat(), archive_on_completion=True)
    other = schedule(clock, kind="once", rule=at.isoformat())
    clock.set(at)
    [occurrence] = run_due(target, clock)
    assert reload(target).status == ScheduleStatus.COMPLETED
    finish(occurrence, SUCCEEDED, at + timedelta(seconds=3))
    assert reload(target).archived_at is not None
    [plain] = run_due(other, clock)
    finish(plain, SUCCEEDED, at + timedelta(seconds=3))
    assert reload(other).archived_at is None


def test_a_database_error_in_the_receivers_is_logged_not_raised_into_the_sender(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from django.db import OperationalError

    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60s", pause_after_failures=1)
    [occurrence] = run_due(target, clock)

    def broken(*args: object) -> None:
        raise OperationalError("database is locked")

    monkeypatch.setattr("scheduler_app.monitoring.receivers.count_failures", broken)
    finish(occurrence, FAILED, clock.now(), "boom")  # sends occurrence_finished
    assert [r.action for r in caplog.records if hasattr(r, "action")][-1] == (
        "occurrence.finish_hooks_failed"
    )
