"""The receivers of the scheduler's signals are connected by AppConfig.ready() and act through
the service layer (a pause after failures is audited like any other pause)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from scheduler_app import events
from scheduler_app.clock import FakeClock
from scheduler_app.models import AuditAction, OccurrenceState, ScheduleStatus
from scheduler_app.safety import audit
from tests.integration.operations.helpers import finish, run_due
from tests.integration.support import START, reload, schedule


def connected_uids(signal: object) -> set[object]:
    return {entry[0][0] for entry in getattr(signal, "receivers", [])}


def test_the_app_connects_its_receivers_once() -> None:
    assert "scheduler_app.monitoring.finished" in connected_uids(events.occurrence_finished)
    assert "scheduler_app.monitoring.duplicates" in connected_uids(events.duplicate_prevented)
    assert len(events.occurrence_finished.receivers) == len(
        connected_uids(events.occurrence_finished)
    )


@pytest.mark.django_db
def test_a_pause_after_failures_goes_through_the_service_and_is_audited() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60s", pause_after_failures=2)
    for attempt in range(2):
        clock.set(START + timedelta(minutes=attempt))
        finish(run_due(target, clock)[-1], OccurrenceState.FAILED, clock.now(), "boom")
    stored = reload(target)
    assert (stored.status, stored.paused_by) == (ScheduleStatus.PAUSED, "scheduler")
    paused = audit.trail([target.pk]).filter(action=AuditAction.PAUSED).get()
    assert paused.reason == stored.pause_note
    assert paused.reason.startswith("paused after 2 consecutive failures")
