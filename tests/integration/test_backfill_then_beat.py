"""docs/admin.md, Backfill: "a backfilled slot keeps the rule slot's key, so the beat never runs
it twice". The existing test backfills after the beat ran; this one attacks the other order,
the one an operator reaches during an outage: the beat is down, the operator backfills the
slots it missed, then the beat comes back and its misfire policy (``catch_up``) wants the same
slots. Every slot must end with exactly one occurrence, the backfilled ones left as they were,
and the beat must go on to the slots after them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scheduler_app import services
from scheduler_app.clock import FakeClock
from scheduler_app.definition.schedule import idempotency_key
from scheduler_app.models import Occurrence, Trigger
from tests.integration.support import MemoryPublisher, reload, rows, schedule, ticker

pytestmark = pytest.mark.django_db

# A Monday; the beat is down from 02:10 to 07:40 (the outage of docs/scheduling.md).
DOWN = datetime(2026, 3, 2, 2, 10, tzinfo=UTC)
BACK = datetime(2026, 3, 2, 7, 40, tzinfo=UTC)


def hour(h: int) -> datetime:
    return DOWN.replace(hour=h, minute=0)


def test_slots_backfilled_while_the_beat_was_down_are_not_run_again_by_its_catch_up() -> None:
    clock = FakeClock(DOWN - timedelta(hours=3))
    hourly = schedule(clock, kind="cron", rule="0 * * * *", misfire_policy="catch_up")
    broker = MemoryPublisher()
    clock.set(DOWN)
    ticker(broker, clock).tick()  # 00:00 .. 02:00 ran; the beat then goes down
    assert reload(hourly).next_run_at == hour(3)

    clock.set(BACK - timedelta(minutes=5))  # the operator, before the beat is back
    plan = services.backfill(hourly, start=hour(3), end=hour(5), reason="outage", clock=clock)
    assert plan.created == 3  # type: ignore[attr-defined]
    backfilled = {row.scheduled_for: row.pk for row in rows(hourly) if row.trigger == "backfill"}
    assert sorted(backfilled) == [hour(3), hour(4), hour(5)]

    clock.set(BACK)
    ticker(broker, clock).tick()  # the beat is back: catch_up wants 03:00 .. 07:00
    clock.set(hour(8) + timedelta(seconds=1))
    ticker(broker, clock).tick()  # and it goes on with 08:00

    made = rows(hourly)
    by_slot = [row.scheduled_for for row in made]
    assert by_slot == [hour(h) for h in range(9)]  # one occurrence per slot, none missing
    assert len({row.idempotency_key for row in made}) == len(made)
    for row in made:
        if row.scheduled_for in backfilled:
            assert (row.pk, row.trigger) == (backfilled[row.scheduled_for], Trigger.BACKFILL)
        assert row.idempotency_key == idempotency_key(hourly.pk, row.scheduled_for)
    after_backfill = [row for row in made if row.scheduled_for > hour(5)]
    assert [row.trigger for row in after_backfill] == [
        Trigger.CATCH_UP,
        Trigger.CATCH_UP,
        Trigger.SCHEDULED,
    ]
    sent = [str(row.pk) for row in broker.sent]
    assert len(sent) == len(set(sent))  # no occurrence handed to the broker twice
    assert Occurrence.objects.filter(schedule=hourly).count() == 9
    assert reload(hourly).next_run_at == hour(9)
