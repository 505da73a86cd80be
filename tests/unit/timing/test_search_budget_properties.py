"""Property: whatever the rule (every kind, with active windows, holidays, bounds and counts),
one computation of a slot evaluates a bounded number of candidates, and within its budget it
gives the answer a search with a far larger budget gives.

Work is counted where it is done: every item the rule's own walk produces (``walks.rule_items``),
every wall time a COUNT rule's walk from DTSTART produces (it numbers its slots from there), and
every local date a solar rule is asked about. Nothing is timed.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from scheduler_app.errors import ScheduleValidationError, SearchExhausted
from scheduler_app.timing import backward, engine, walks
from scheduler_app.timing.budget import SearchBudget
from scheduler_app.timing.calendars.solar import SolarRule
from scheduler_app.timing.rrules import RRuleSpec
from scheduler_app.timing.rules import Timing, build_timing
from scheduler_app.timing.windows import MAX_CLOSED

BUDGET = SearchBudget(candidates=400, span=timedelta(days=800))
ORACLE = SearchBudget(candidates=20_000, span=timedelta(days=4_000), seconds=60.0)
RESTART_OVERHEAD = 3
"""Items a restarted walk may produce without being charged: the one past the end that stops
it, and a solar rule's day before the start (each restart follows a charged candidate)."""
ZONES = ["UTC", "Europe/Riga", "America/New_York", "Pacific/Apia", "Australia/Lord_Howe"]
DAYS = ["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"]


class Work:
    """Counts the candidates the engine evaluates while installed."""

    def __init__(self) -> None:
        self.items = 0
        self.solar_days = 0
        self.counted = 0
        """Wall times of COUNT rules' walks from DTSTART (before the start: charged, unyielded)."""

    @property
    def total(self) -> int:
        return self.items + self.solar_days + self.counted


@contextmanager
def counting() -> Iterator[Work]:
    work = Work()
    real_items, real_event, real_counted = walks.rule_items, SolarRule.event_on, RRuleSpec._counted

    def items(timing: Timing, after: datetime, meter: Any) -> Iterator[Any]:
        for item in real_items(timing, after, meter):
            if not isinstance(timing.rule, SolarRule):  # solar days are counted below
                work.items += 1
            yield item

    def event_on(rule: SolarRule, day: Any, zone: Any) -> datetime | None:
        work.solar_days += 1
        return real_event(rule, day, zone)

    def counted(spec: RRuleSpec, start: datetime, charge: Any = None) -> Iterator[datetime]:
        def charged(wall: datetime) -> bool:
            work.counted += 1
            return bool(charge(wall)) if charge is not None else True

        yield from real_counted(spec, start, charged)

    with (
        mock.patch.object(engine, "rule_items", items),
        mock.patch.object(SolarRule, "event_on", event_on),
        mock.patch.object(RRuleSpec, "_counted", counted),
    ):
        yield work


cron_rules = st.builds(
    "{} {} {} {} {}".format,
    st.sampled_from(["0", "*/15", "30", "*", "7,37"]),
    st.sampled_from(["*", "9", "0-6", "23", "2"]),
    st.sampled_from(["*", "1", "29", "31", "13"]),
    st.sampled_from(["*", "2", "FEB,AUG", "12"]),
    st.sampled_from(["*", "MON", "5", "SAT,SUN"]),
).map(lambda rule: {"kind": "cron", "rule": rule})
rrule_rules = st.builds(
    lambda freq, interval, extra: {
        "kind": "rrule",
        "rule": f"FREQ={freq};INTERVAL={interval}{extra}",
    },
    st.sampled_from(["MINUTELY", "HOURLY", "DAILY", "WEEKLY", "MONTHLY", "YEARLY"]),
    st.integers(1, 40),
    st.sampled_from(
        [
            "",
            ";BYDAY=MO",
            ";BYMONTH=2;BYMONTHDAY=29",
            ";BYDAY=-1FR;BYHOUR=17",
            ";BYSETPOS=-1",
            ";COUNT=1000000",
            ";COUNT=7",
        ]
    ),
)
interval_rules = st.integers(10, 400 * 86_400).map(
    lambda seconds: {"kind": "interval", "rule": f"{seconds}s"}
)
once_rules = st.datetimes(
    min_value=datetime(2000, 1, 1),  # made aware below
    max_value=datetime(2060, 1, 1),
).map(lambda at: {"kind": "once", "rule": at.replace(tzinfo=UTC)})
solar_rules = st.builds(
    lambda event, latitude, longitude: {
        "kind": "solar",
        "rule": f"{event} {latitude:.2f} {longitude:.2f}",
    },
    st.sampled_from(["sunrise", "sunset", "dawn", "dusk", "noon"]),
    st.floats(-90, 90),
    st.floats(-180, 180),
)
windows = st.one_of(
    st.none(),
    st.builds(
        lambda days, start, length, policy: {
            "window": (
                f"{','.join(days)} {start // 60:02d}:{start % 60:02d}-"
                f"{(start + length) // 60:02d}:{(start + length) % 60:02d}"
            ),
            "window_policy": policy,
        },
        st.lists(st.sampled_from(DAYS), min_size=1, max_size=3, unique=True),
        st.integers(0, 23 * 60),
        st.integers(1, 59),
        st.sampled_from(["defer", "skip"]),
    ),
)
instants = st.datetimes(
    min_value=datetime(2000, 1, 1),  # made aware below
    max_value=datetime(2060, 1, 1),
).map(lambda value: value.replace(tzinfo=UTC))


@st.composite
def timings(draw: st.DrawFn) -> Timing:
    fields: dict[str, Any] = draw(
        st.one_of(cron_rules, rrule_rules, interval_rules, once_rules, solar_rules)
    )
    fields["timezone"] = draw(st.sampled_from(ZONES))
    fields["anchor"] = draw(instants)
    fields |= draw(windows) or {}
    fields["exclude_holidays"] = draw(st.sampled_from([None, None, "LV", "US"]))
    if draw(st.booleans()):
        fields["starts_at"] = draw(instants)
        if draw(st.booleans()):
            fields["max_count"] = draw(st.integers(1, 30))
    if draw(st.booleans()):
        fields["ends_at"] = draw(instants)
    try:
        timing = build_timing(**fields, budget=BUDGET)
    except ScheduleValidationError:
        assume(False)
        raise  # pragma: no cover - assume(False) raises
    return timing


def bound(timing: Timing) -> int:
    """The most candidates one question may evaluate: its budget, plus what each walk produces
    uncharged. Walks are restarted by a window (at most ``MAX_CLOSED`` times, each after a
    charged candidate) and by the previous-slot search (once per doubling span, then once per
    halving of the range that holds its answer)."""
    candidates = timing.budget.candidates + 1
    restarts = min(candidates, MAX_CLOSED) if timing.window is not None else 1
    passes = 2 * math.ceil(math.log2(timing.budget.span / timedelta(hours=1))) + 4
    return candidates + RESTART_OVERHEAD * (restarts + passes)


def answer(question: Any, timing: Timing, instant: datetime) -> tuple[Any, int]:
    with counting() as work:
        try:
            result: Any = question(timing, instant)
        except SearchExhausted as exhausted:
            result = exhausted
    return result, work.total


def agrees(bounded: Any, question: Any, timing: Timing, instant: datetime) -> bool:
    """Within its budget the bounded search gives the answer of a far larger budget."""
    if isinstance(bounded, SearchExhausted):
        return True
    try:
        oracle = question(dataclasses.replace(timing, budget=ORACLE), instant)
    except SearchExhausted:
        return False
    return bool(oracle == bounded)


def previous_exclusive(timing: Timing, instant: datetime) -> datetime | None:
    return backward.previous_slot(timing, instant, inclusive=False)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(timing=timings(), instant=instants)
def test_the_next_slot_is_found_within_the_budget(timing: Timing, instant: datetime) -> None:
    result, work = answer(engine.next_after, timing, instant)
    assert work <= bound(timing)
    assert agrees(result, engine.next_after, timing, instant)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(timing=timings(), instant=instants)
def test_the_previous_slot_is_found_within_the_budget(timing: Timing, instant: datetime) -> None:
    result, work = answer(previous_exclusive, timing, instant)
    assert work <= bound(timing)
    assert agrees(result, previous_exclusive, timing, instant)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(timing=timings(), instant=instants)
def test_validation_does_a_bounded_number_of_searches(timing: Timing, instant: datetime) -> None:
    # The first slot, the one before it and two after it: four questions at most.
    with counting() as work, suppress(ScheduleValidationError):
        backward.first_slot(timing, instant)
    assert work.total <= (2 + backward.FOLLOWING_CHECKED) * bound(timing)
