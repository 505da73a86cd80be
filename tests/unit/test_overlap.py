"""Overlap decisions for each policy (pure)."""

from __future__ import annotations

import pytest

from scheduler_app.policies.overlap import decide_overlap


@pytest.mark.parametrize(
    ("policy", "active", "buffered", "new", "states"),
    [
        ("allow", 1, 0, 2, ("pending", "pending")),
        ("skip", 0, 0, 1, ("pending",)),
        ("skip", 1, 0, 1, ("skipped",)),
        ("skip", 0, 1, 1, ("skipped",)),
        ("skip", 0, 0, 3, ("pending", "buffered", "buffered")),  # a catch-up batch runs in turn
        ("buffer_one", 1, 0, 1, ("buffered",)),
        ("buffer_one", 1, 1, 1, ("skipped",)),
        ("buffer_one", 1, 0, 3, ("buffered", "skipped", "skipped")),
        ("buffer_one", 0, 0, 3, ("pending", "buffered", "skipped")),
        ("buffer_all", 1, 2, 2, ("buffered", "buffered")),
        ("buffer_all", 0, 0, 2, ("pending", "buffered")),
        ("cancel_previous", 0, 0, 1, ("pending",)),
        ("cancel_previous", 1, 0, 1, ("buffered",)),
        ("cancel_previous", 1, 1, 2, ("skipped", "buffered")),
    ],
)
def test_states(policy: str, active: int, buffered: int, new: int, states: tuple[str, ...]) -> None:
    assert decide_overlap(policy, active=active, buffered=buffered, new=new).states == states


def test_cancel_previous_asks_the_running_one_to_stop_and_replaces_waiting_ones() -> None:
    decision = decide_overlap("cancel_previous", active=1, buffered=1, new=1)
    assert decision.cancel_active and decision.supersede_buffered


def test_cancel_previous_on_an_idle_schedule_cancels_nothing() -> None:
    decision = decide_overlap("cancel_previous", active=0, buffered=0, new=1)
    assert not decision.cancel_active and not decision.supersede_buffered


def test_no_new_occurrences_no_states() -> None:
    assert decide_overlap("skip", active=1, buffered=0, new=0).states == ()
