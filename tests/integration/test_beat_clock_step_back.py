"""A wall-clock step back on the beat host delays slots, never duplicates them.

Attacked (docs/guarantees.md, "Wall clocks and monotonic clocks"): the beat's clock is stepped
back (NTP, a VM resume) after it materialized a slot, an operator edits the schedule's timing
while the clock is behind, so ``next_run_at`` is computed again from the stepped-back instant
and the slot that already has a row comes due a second time. The beat must store and publish
it once, and must not fire the next slot before the clock reaches it again.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scheduler_app.clock import FakeClock
from scheduler_app.services import update_schedule
from tests.integration.support import START, MemoryPublisher, reload, rows, schedule, ticker

pytestmark = pytest.mark.django_db
FIRST = datetime(2026, 1, 5, 0, 5, tzinfo=UTC)
"""The first slot of a five-minute cron created at START."""
STEP = timedelta(minutes=4)


def test_a_clock_stepped_back_delays_the_next_slot_and_never_repeats_the_last() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    target = schedule(clock, kind="cron", rule="*/5 * * * *")
    beat = ticker(broker, clock)
    clock.set(FIRST)
    assert beat.tick().published == 1

    clock.set(FIRST + timedelta(seconds=30) - STEP)  # the host's clock steps back 4 minutes
    # An edit of the timing while the clock is behind: next_run_at is the stepped-back next slot,
    # the slot whose row exists already.
    update_schedule(target.pk, expected_version=1, clock=clock, rule="0-59/5 * * * *")
    assert reload(target).next_run_at == FIRST
    while clock.now() < FIRST + timedelta(minutes=10):
        beat.tick()
        clock.advance(15)

    second = FIRST + timedelta(minutes=5)
    assert [row.scheduled_for for row in rows(target)] == [FIRST, second]
    assert sorted(broker.ids) == sorted(str(row.id) for row in rows(target))
    assert len(broker.ids) == 2  # the first slot was published once, not again after the step
    assert rows(target)[1].created_at >= second  # delayed by the step, never early
