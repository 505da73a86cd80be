"""The bounded "does it ever fire" search: ``first_slot`` answers like ``next_after`` for
rules that fire, and gives up with a clear error instead of walking to year 9999."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scheduler_app.errors import ScheduleValidationError
from scheduler_app.timing import (
    SearchExhausted,
    build_timing,
    first_slot,
    first_slot_from,
    next_after,
)

START = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("kind", "rule"),
    [
        ("cron", "0 9 * * MON-FRI"),
        ("rrule", "FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;BYMINUTE=0"),
        ("interval", "3600"),
        ("once", "2030-06-01T00:00:00+00:00"),
    ],
)
def test_the_same_answer_as_next_after(kind: str, rule: str) -> None:
    timing = build_timing(kind=kind, rule=rule, timezone="Europe/Riga", anchor=START)
    assert first_slot(timing, START) == next_after(timing, START)


def test_a_rule_with_no_more_slots_is_none_not_an_error() -> None:
    timing = build_timing(kind="once", rule="2020-01-01T00:00:00+00:00", timezone="UTC")
    assert first_slot(timing, START) is None


def test_the_budget_and_the_horizon_bound_the_search() -> None:
    rare = build_timing(
        kind="rrule",
        rule="FREQ=YEARLY;BYMONTH=2;BYDAY=MO;BYSETPOS=-1",
        timezone="UTC",
        anchor=START,
        window="MON-FRI 09:00-10:00",
        window_policy="skip",
    )
    with pytest.raises(SearchExhausted) as caught:
        first_slot(rare, START)
    assert (caught.value.field, caught.value.code) == ("rule", "never_fires")
    hourly = build_timing(kind="cron", rule="0 * * * *", timezone="UTC")
    with pytest.raises(SearchExhausted):
        first_slot(hourly, START, budget=0)
    far = build_timing(kind="once", rule="2090-01-01T00:00:00+00:00", timezone="UTC")
    with pytest.raises(SearchExhausted):
        first_slot(far, START, horizon=timedelta(days=365))
    assert first_slot(far, START) == datetime(2090, 1, 1, tzinfo=UTC)


def test_first_slot_from_keeps_a_slot_at_now_and_refuses_a_rule_with_none() -> None:
    at_start = build_timing(kind="once", rule=START.isoformat(), timezone="UTC")
    assert first_slot_from(at_start, START) == START
    past = build_timing(kind="once", rule="2020-01-01T00:00:00+00:00", timezone="UTC")
    assert first_slot_from(past, START, required=False) is None
    with pytest.raises(ScheduleValidationError) as caught:
        first_slot_from(past, START)
    assert (caught.value.field, caught.value.code) == ("rule", "no_future_slot")
    assert caught.value.message == "the rule has no slot at or after now; pick a future time"
