"""``decide_misfire``: which due slots become occurrences. Pure: literal instants, no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scheduler_app.policies.misfire import (
    CATCH_UP,
    FIRE_ONCE,
    SKIP,
    MisfireRules,
    PlannedSlot,
    decide_misfire,
)

NOW = datetime(2026, 1, 10, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def rules(
    policy: str,
    *,
    grace: timedelta = timedelta(seconds=60),
    window: timedelta = timedelta(hours=24),
    limit: int = 12,
) -> MisfireRules:
    return MisfireRules(
        policy=policy, max_lateness=grace, catch_up_window=window, catch_up_limit=limit
    )


def hourly_back(count: int, *, newest: datetime = NOW) -> list[datetime]:
    """``count`` hourly slots ending at ``newest``, oldest first."""
    return [newest - HOUR * i for i in reversed(range(count))]


@pytest.mark.parametrize("policy", [SKIP, FIRE_ONCE, CATCH_UP])
def test_on_time_slots_are_emitted_as_scheduled_by_every_policy(policy: str) -> None:
    slot = NOW - timedelta(seconds=30)
    decision = decide_misfire([slot], NOW, rules(policy))
    assert decision.emit == (PlannedSlot(slot, False),)
    assert (decision.late, decision.skipped, decision.caught_up) == (0, 0, 0)


@pytest.mark.parametrize("policy", [SKIP, FIRE_ONCE, CATCH_UP])
def test_no_slots_no_decision(policy: str) -> None:
    decision = decide_misfire([], NOW, rules(policy))
    assert (decision.emit, decision.late, decision.skipped) == ((), 0, 0)


@pytest.mark.parametrize(
    ("lateness", "on_time"),
    [
        (timedelta(seconds=59), True),
        (timedelta(seconds=60), True),
        (timedelta(seconds=60, microseconds=1), False),
        (timedelta(seconds=61), False),
    ],
)
def test_max_lateness_is_an_inclusive_grace(lateness: timedelta, on_time: bool) -> None:
    slot = NOW - lateness
    decision = decide_misfire([slot], NOW, rules(SKIP))
    assert (decision.emit == (PlannedSlot(slot, False),)) is on_time
    assert decision.late == (0 if on_time else 1)


def test_zero_grace_only_the_exact_instant_is_on_time() -> None:
    decision = decide_misfire([NOW], NOW, rules(SKIP, grace=timedelta(0)))
    assert decision.emit == (PlannedSlot(NOW, False),)
    late = decide_misfire([NOW - timedelta(microseconds=1)], NOW, rules(SKIP, grace=timedelta(0)))
    assert late.emit == ()


def test_skip_emits_no_late_slot_and_counts_them() -> None:
    slots = hourly_back(5, newest=NOW - HOUR)
    decision = decide_misfire(slots, NOW, rules(SKIP))
    assert decision.emit == ()
    assert (decision.late, decision.skipped, decision.caught_up) == (5, 5, 0)


def test_skip_still_runs_the_on_time_slot() -> None:
    slots = [*hourly_back(3, newest=NOW - HOUR), NOW]
    decision = decide_misfire(slots, NOW, rules(SKIP))
    assert decision.emit == (PlannedSlot(NOW, False),)
    assert (decision.late, decision.skipped) == (3, 3)


def test_fire_once_without_an_on_time_slot_runs_only_the_most_recent_late_one() -> None:
    slots = hourly_back(4, newest=NOW - HOUR)
    decision = decide_misfire(slots, NOW, rules(FIRE_ONCE))
    assert decision.emit == (PlannedSlot(NOW - HOUR, True),)
    assert (decision.late, decision.skipped, decision.caught_up) == (4, 3, 1)


def test_fire_once_with_an_on_time_slot_lets_it_cover_the_missed_ones() -> None:
    slots = [*hourly_back(4, newest=NOW - HOUR), NOW]
    decision = decide_misfire(slots, NOW, rules(FIRE_ONCE))
    assert decision.emit == (PlannedSlot(NOW, False),)
    assert (decision.late, decision.skipped, decision.caught_up) == (4, 4, 0)


def test_fire_once_ignores_the_catch_up_window() -> None:
    slot = NOW - timedelta(days=3)
    decision = decide_misfire([slot], NOW, rules(FIRE_ONCE, window=HOUR))
    assert decision.emit == (PlannedSlot(slot, True),)


def test_catch_up_emits_every_late_slot_oldest_first() -> None:
    slots = hourly_back(3, newest=NOW - HOUR)
    decision = decide_misfire(slots, NOW, rules(CATCH_UP))
    assert decision.emit == tuple(PlannedSlot(s, True) for s in slots)
    assert (decision.late, decision.skipped, decision.caught_up) == (3, 0, 3)


def test_catch_up_then_the_on_time_slot_last() -> None:
    late = hourly_back(2, newest=NOW - HOUR)
    decision = decide_misfire([*late, NOW], NOW, rules(CATCH_UP))
    assert decision.emit == (*(PlannedSlot(s, True) for s in late), PlannedSlot(NOW, False))
    assert decision.caught_up == 2


def test_catch_up_limit_keeps_the_most_recent_slots_oldest_first() -> None:
    slots = hourly_back(20, newest=NOW - HOUR)
    decision = decide_misfire(slots, NOW, rules(CATCH_UP, limit=5))
    assert [p.scheduled_for for p in decision.emit] == slots[-5:]
    assert all(p.catch_up for p in decision.emit)
    assert (decision.late, decision.skipped, decision.caught_up) == (20, 15, 5)


def test_catch_up_window_drops_older_slots() -> None:
    slots = hourly_back(10, newest=NOW - HOUR)  # NOW-10h .. NOW-1h
    decision = decide_misfire(slots, NOW, rules(CATCH_UP, window=4 * HOUR))
    assert [p.scheduled_for for p in decision.emit] == hourly_back(4, newest=NOW - HOUR)
    assert (decision.late, decision.skipped) == (10, 6)


def test_catch_up_window_boundary_is_inclusive() -> None:
    slots = [NOW - 4 * HOUR - timedelta(microseconds=1), NOW - 4 * HOUR]
    decision = decide_misfire(slots, NOW, rules(CATCH_UP, window=4 * HOUR))
    assert [p.scheduled_for for p in decision.emit] == [NOW - 4 * HOUR]


def test_catch_up_window_and_limit_together() -> None:
    slots = hourly_back(48, newest=NOW - HOUR)
    decision = decide_misfire(slots, NOW, rules(CATCH_UP, window=24 * HOUR, limit=12))
    assert [p.scheduled_for for p in decision.emit] == hourly_back(12, newest=NOW - HOUR)
    assert (decision.late, decision.skipped, decision.caught_up) == (48, 36, 12)


@pytest.mark.parametrize(("policy", "emitted"), [(SKIP, 0), (FIRE_ONCE, 1), (CATCH_UP, 1)])
def test_uncounted_late_slots_add_to_missed_and_skipped(policy: str, emitted: int) -> None:
    decision = decide_misfire([NOW - HOUR], NOW, rules(policy), uncounted_late=100)
    assert len(decision.emit) == emitted
    assert decision.late == 101
    assert decision.skipped == 101 - emitted
