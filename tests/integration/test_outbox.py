"""The outbox under crash injection: nothing lost, duplicates only as the same task id."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection

from scheduler_app.clock import FakeClock
from scheduler_app.dispatch.outbox import claim_pending, mark_dispatched
from scheduler_app.handoff.protocol import PublishError, context_headers
from scheduler_app.models import Occurrence, OccurrenceState, Schedule
from tests.integration.support import START, MemoryPublisher, rows, schedule, ticker

pytestmark = pytest.mark.django_db
LEASE = 30.0
MINUTE = timedelta(minutes=1)


class Killed(BaseException):
    """The process dying (kill -9, SIGTERM's SystemExit): not an ``Exception``, so no handler
    of the outbox or the beat takes it for one bad row."""


class CrashingPublisher(MemoryPublisher):
    """The process dies inside ``publish``."""

    def publish(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        raise Killed("killed")


class RefusingPublisher(MemoryPublisher):
    def publish(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        raise PublishError("connection refused")


def every_minute(clock: FakeClock) -> Schedule:
    return schedule(clock, kind="cron", rule="* * * * *", kwargs={"n": 1})


def states() -> Counter[str]:
    return Counter(Occurrence.objects.values_list("state", flat=True))


def test_broker_error_after_insert_leaves_rows_pending_until_a_later_tick() -> None:
    clock = FakeClock(START)
    target = every_minute(clock)
    clock.set(START + MINUTE)
    result = ticker(RefusingPublisher(), clock).tick()
    assert (result.created, result.published, result.broker_failed) == (1, 0, True)
    [row] = rows(target)
    assert (row.state, row.publish_lease_until) == (OccurrenceState.PENDING, None)

    broker = MemoryPublisher()
    clock.advance(1)
    assert ticker(broker, clock).tick().published == 1
    assert broker.ids == [str(row.id)]
    assert states() == {"dispatched": 1}


def test_crash_inside_publish_is_retried_after_the_publish_lease() -> None:
    clock = FakeClock(START)
    target = every_minute(clock)
    clock.set(START + MINUTE)
    with pytest.raises(Killed):
        ticker(CrashingPublisher(), clock, PUBLISH_LEASE=LEASE, LEASE_TTL=1.0).tick()
    [row] = rows(target)
    assert row.state == OccurrenceState.PENDING

    broker = MemoryPublisher()
    survivor = ticker(broker, clock, owner="other-beat", PUBLISH_LEASE=LEASE, LEASE_TTL=1.0)
    clock.advance(LEASE - 1)
    assert survivor.tick().leader  # (SQLite: the dead beat's scheduler lease ran out)
    assert broker.sent == []  # the row is still leased to the dead beat
    clock.advance(2)
    survivor.tick()
    assert broker.ids == [str(row.id)]
    assert states()["dispatched"] == 1


def test_publish_then_crash_before_mark_republishes_the_same_task_id() -> None:
    clock = FakeClock(START)
    target = every_minute(clock)
    clock.set(START + MINUTE)
    ticker(RefusingPublisher(), clock).tick()  # insert only
    [original] = rows(target)

    lease = timedelta(seconds=LEASE)
    claimed = claim_pending(clock.now(), 10, lease)
    first_broker = MemoryPublisher()
    first_broker.publish(claimed)  # ... and the beat dies before mark_dispatched
    assert first_broker.ids == [str(original.id)]

    second_broker = MemoryPublisher()
    beat = ticker(second_broker, clock, PUBLISH_LEASE=LEASE)
    clock.advance(lease - timedelta(seconds=1))
    beat.tick()
    assert second_broker.sent == []
    clock.advance(timedelta(seconds=1, microseconds=1))
    beat.tick()
    assert second_broker.ids == [str(original.id)]
    assert Occurrence.objects.count() == 1
    assert states() == {"dispatched": 1}


def test_broker_down_for_several_ticks_loses_nothing() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    every_minute(clock)
    beat = ticker(broker, clock, BATCH_SIZE=3)
    broker.down = True
    for _ in range(5):
        clock.advance(MINUTE)
        assert beat.tick().broker_failed
    assert states() == {"pending": 5}

    broker.down, broker.fail_after = False, 2  # back, but the connection drops midway
    clock.advance(MINUTE)
    result = beat.tick()
    # The new slot leaves from memory right after its insert, then the backlog: 2 of it
    # before the connection drops.
    assert (result.published, result.broker_failed) == (1 + 2, True)

    broker.fail_after = None
    for _ in range(3):
        clock.advance(1)
        beat.tick()
    assert states() == {"dispatched": 6}
    ids = {str(pk) for pk in Occurrence.objects.values_list("id", flat=True)}
    assert set(broker.ids) == ids
    assert len(broker.ids) == len(ids)  # a clean failure republishes nothing


def test_pending_rows_leased_by_one_beat_are_invisible_to_another() -> None:
    clock = FakeClock(START)
    every_minute(clock)
    clock.set(START + MINUTE)
    ticker(RefusingPublisher(), clock).tick()
    lease = timedelta(seconds=LEASE)
    assert len(claim_pending(clock.now(), 10, lease)) == 1
    assert claim_pending(clock.now(), 10, lease) == []
    assert len(claim_pending(clock.now() + lease + timedelta(microseconds=1), 10, lease)) == 1


@pytest.mark.parametrize(
    "later_state",
    [
        OccurrenceState.RUNNING,
        OccurrenceState.SUCCEEDED,
        OccurrenceState.FAILED,
        OccurrenceState.CANCELLED,
        OccurrenceState.DISPATCHED,
    ],
)
def test_mark_dispatched_never_overwrites_a_later_state(later_state: str) -> None:
    clock = FakeClock(START)
    target = every_minute(clock)
    clock.set(START + 3 * MINUTE)
    ticker(RefusingPublisher(), clock).tick()
    first, *others = rows(target)
    Occurrence.objects.filter(pk=first.pk).update(state=later_state, dispatched_at=None)

    assert mark_dispatched([first, *others], clock.now()) == len(others)
    first.refresh_from_db()
    assert (first.state, first.dispatched_at) == (later_state, None)
    assert states()["dispatched"] == len(others) + (later_state == OccurrenceState.DISPATCHED)


def test_headers_carry_the_key_and_the_context() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    target = every_minute(clock)
    clock.set(START + MINUTE + timedelta(seconds=2))
    ticker(broker, clock).tick()
    [sent] = broker.sent
    headers = context_headers(sent)
    assert headers["occurrence_id"] == str(sent.id)
    assert headers["schedule_id"] == str(target.id)
    assert headers["idempotency_key"] == sent.idempotency_key
    assert headers["scheduled_for"] == "2026-01-05T00:01:00Z"
    assert (headers["schedule_version"], headers["trigger"], headers["catch_up"]) == (
        1,
        "scheduled",
        False,
    )


class CountingPublisher(MemoryPublisher):
    """Notes how many occurrences exist when each batch is published."""

    def __init__(self) -> None:
        super().__init__()
        self.stored_at_publish: list[int] = []

    def publish(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        self.stored_at_publish.append(Occurrence.objects.count())
        return super().publish(occurrences)


def test_a_burst_is_published_batch_by_batch_not_after_the_whole_burst() -> None:
    clock, broker = FakeClock(START), CountingPublisher()
    for _ in range(7):
        every_minute(clock)
    clock.set(START + MINUTE)
    result = ticker(broker, clock, BATCH_SIZE=3).tick()
    assert (result.created, result.published) == (7, 7)
    # The first messages left when one batch of 3 was stored, not all 7.
    assert broker.stored_at_publish[0] == 3
    assert states() == {"dispatched": 7}


def test_a_burst_with_the_broker_down_is_still_fully_materialized() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    for _ in range(7):
        every_minute(clock)
    clock.set(START + MINUTE)
    broker.down = True
    result = ticker(broker, clock, BATCH_SIZE=3).tick()
    assert (result.created, result.published, result.broker_failed) == (7, 0, True)
    assert states() == {"pending": 7}


@pytest.mark.postgres
def test_marking_a_batch_reads_each_row_once_not_each_row_against_the_batch() -> None:
    """Sixty rows pending in one slot, forty marked: the update finds them by their ids and
    never joins each row of the slot with the locked rows again (``IN (sub-select)`` did: a
    nested loop, 83 ms for a batch of 500 on a partition without statistics)."""
    clock = FakeClock(START)
    targets = [every_minute(clock) for _ in range(60)]
    clock.set(START + MINUTE)
    ticker(RefusingPublisher(), clock).tick()
    pending = list(Occurrence.objects.filter(schedule__in=targets).order_by("id"))
    assert len(pending) == 60 and {row.scheduled_for for row in pending} == {
        pending[0].scheduled_for
    }
    plans: list[str] = []

    def explain(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        """Run the statement under EXPLAIN ANALYZE (it still updates) and keep the plan."""
        result = execute(f"EXPLAIN (ANALYZE) {sql}", params, many, context)
        plans.append("\n".join(line for (line,) in context["cursor"].fetchall()))
        return result

    with connection.execute_wrapper(explain):
        mark_dispatched(pending[10:50], clock.now())
    (plan,) = plans
    assert "Semi Join" not in plan, plan
    removed = [int(n) for n in re.findall(r"Rows Removed by Join Filter: (\d+)", plan)]
    assert not removed, plan
    # EXPLAIN ANALYZE ran the update: the forty are dispatched, the other twenty pending.
    assert states() == Counter({"dispatched": 40, "pending": 20})
