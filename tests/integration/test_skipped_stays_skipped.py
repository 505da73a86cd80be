"""docs/scheduling.md, Misfire policies: "A slot skipped on purpose stays skipped even if the
policy is changed later: ``next_run_at`` has moved past it." Attacked as an operator would,
through the services and the beat: an hourly ``skip`` schedule loses 03:00 .. 07:00 to an
outage, the operator then switches it to ``catch_up`` (the widest window and limit), pauses
and resumes it, and the beat ticks on. None of the skipped slots may come back as an occurrence,
and the counters keep saying they were skipped."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from scheduler_app import services
from scheduler_app.clock import FakeClock
from tests.integration.support import MemoryPublisher, reload, schedule, slots, ticker

pytestmark = pytest.mark.django_db

# A Monday; the beat is down from 02:10 to 07:40 (the outage of docs/scheduling.md).
DAY = datetime(2026, 3, 2, tzinfo=UTC)


def at(hour: int, minute: int = 0, second: int = 0) -> datetime:
    return DAY.replace(hour=hour, minute=minute, second=second)


def test_slots_skipped_by_the_policy_are_not_run_after_the_policy_becomes_catch_up() -> None:
    clock = FakeClock(at(1, 59))
    hourly = schedule(clock, kind="cron", rule="0 * * * *", misfire_policy="skip")
    broker = MemoryPublisher()
    clock.set(at(2, 0, 5))
    ticker(broker, clock).tick()  # 02:00 on time; then the beat is down
    clock.set(at(7, 40))
    ticker(broker, clock).tick()  # back: 03:00 .. 07:00 are late, and skipped
    skipped = reload(hourly)
    assert (skipped.missed_count, skipped.skipped_count) == (5, 5)
    assert skipped.next_run_at == at(8)

    clock.set(at(7, 45))
    changed = services.update_schedule(
        hourly.pk,
        expected_version=skipped.version,
        misfire_policy="catch_up",
        catch_up_window=7 * 86400,
        catch_up_limit=1000,
        clock=clock,
    )
    assert changed.version == skipped.version + 1
    ticker(broker, clock).tick()
    clock.set(at(8, 0, 5))
    ticker(broker, clock).tick()  # 08:00 on time
    clock.set(at(8, 30))
    services.pause_schedule(hourly.pk, clock=clock)
    assert services.preview_resume(reload(hourly), at(8, 45)).count == 0
    clock.set(at(8, 45))
    services.resume_schedule(hourly.pk, clock=clock)
    ticker(broker, clock).tick()

    assert slots(hourly) == [at(2), at(8)]
    after = reload(hourly)
    assert (after.skipped_count, after.caught_up_count) == (5, 0)
    assert after.next_run_at == at(9)
