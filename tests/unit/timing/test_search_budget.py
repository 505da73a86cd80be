"""Every search for a slot runs under a budget of candidates and of span (security review 4,
High: a solar rule that meets its one-minute skip window about once stalled the beat).

Work is counted, never timed: ``CountedRule`` counts the local dates a solar rule is asked
about (one astral computation each, about 30 microseconds).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from scheduler_app.errors import InvalidRule, SchedulerError, SearchExhausted
from scheduler_app.timing import (
    build_timing,
    first_slot,
    next_after,
    previous_slot,
    slots_between,
)
from scheduler_app.timing.budget import SearchBudget
from scheduler_app.timing.calendars.solar import SolarRule, parse_solar
from scheduler_app.timing.rules import Timing

NOW = datetime(2026, 3, 20, tzinfo=UTC)
FINDING_SLOT = datetime(2027, 3, 20, 1, 8, 25, tzinfo=UTC)  # a Saturday, 01:08 UTC


@dataclass(frozen=True)
class CountedRule(SolarRule):
    """A solar rule that counts the local dates it is asked about."""

    asked: list[date] = field(default_factory=list, compare=False, hash=False)

    def event_on(self, day: date, zone: ZoneInfo) -> datetime | None:
        self.asked.append(day)
        return super().event_on(day, zone)


def finding(budget: SearchBudget | None = None) -> tuple[Timing, CountedRule]:
    """The review's rule: sunrise at latitude 89.5 against the one-minute window Sat 01:08."""
    timing = build_timing(
        kind="solar",
        rule="sunrise 89.5 0",
        timezone="UTC",
        window="SAT 01:08-01:09",
        window_policy="skip",
        budget=budget,
    )
    plain = parse_solar("sunrise 89.5 0")
    rule = CountedRule(plain.event, plain.latitude, plain.longitude)
    return dataclasses.replace(timing, rule=rule), rule


# --- the finding -----------------------------------------------------------------------------


def test_the_findings_first_slot_is_found_cheaply() -> None:
    timing, rule = finding()
    assert next_after(timing, NOW) == FINDING_SLOT
    assert len(rule.asked) < 1_000


def test_the_search_after_the_findings_slot_gives_up_within_the_budget() -> None:
    # Before the budget: 153,077 dates walked towards year 9999 (4.6 s of CPU), then None.
    timing, rule = finding()
    with pytest.raises(SearchExhausted) as caught:
        next_after(timing, FINDING_SLOT)
    assert caught.value.exhausted == "span"
    assert (caught.value.field, caught.value.code) == ("rule", "never_fires")
    assert "SCHEDULER_SEARCH_SPAN_DAYS" in caught.value.message
    assert len(rule.asked) <= 2 * 3_653 + 500  # the dates of ten years, and the restarts


def test_the_search_before_the_findings_slot_gives_up_within_the_budget() -> None:
    # Before the budget: 630,617 dates walked back towards year 1 (18 s), then OverflowError.
    timing, rule = finding()
    with pytest.raises(SearchExhausted) as caught:
        previous_slot(timing, FINDING_SLOT, inclusive=False)
    assert caught.value.exhausted == "span"
    assert "before 2027-03-20 01:08 UTC" in caught.value.message
    assert len(rule.asked) <= 4 * 3_653 + 1_000  # spans doubling up to ten years


def test_validation_refuses_the_findings_rule() -> None:
    timing, rule = finding()
    with pytest.raises(SearchExhausted) as caught:
        first_slot(timing, NOW)
    assert caught.value.field == "rule"
    assert "rarer than the scheduler searches for" in caught.value.message
    assert isinstance(caught.value, SchedulerError)
    assert len(rule.asked) <= 8 * 3_653


def test_a_smaller_budget_means_less_work() -> None:
    timing, rule = finding(SearchBudget(span=timedelta(days=365)))
    with pytest.raises(SearchExhausted):
        next_after(timing, FINDING_SLOT)
    assert len(rule.asked) <= 2 * 365 + 100


# --- the budget's two limits -----------------------------------------------------------------


def test_the_candidates_run_out_and_the_error_says_so() -> None:
    timing = build_timing(
        kind="cron",
        rule="* * * * *",
        timezone="UTC",
        exclude_holidays="LV",
        budget=SearchBudget(candidates=300),
    )
    christmas = datetime(2026, 12, 25, tzinfo=UTC)  # 1,440 minutes of a holiday in Latvia
    with pytest.raises(SearchExhausted) as caught:
        next_after(timing, christmas)
    assert caught.value.exhausted == "candidates"
    assert "300 candidate times" in caught.value.message
    assert "SCHEDULER_SEARCH_CANDIDATES" in caught.value.message


def test_each_slot_handed_out_starts_a_new_search() -> None:
    timing = build_timing(
        kind="cron", rule="0 * * * *", timezone="UTC", budget=SearchBudget(candidates=2)
    )
    slots = slots_between(timing, NOW, NOW + timedelta(days=3))
    assert len(slots) == 72  # 72 slots from a budget of 2 candidates per slot


def test_a_far_slot_costs_one_candidate_not_a_refusal() -> None:
    once = build_timing(kind="once", rule="2090-01-01T00:00:00+00:00", timezone="UTC")
    assert next_after(once, NOW) == datetime(2090, 1, 1, tzinfo=UTC)
    assert previous_slot(once, datetime(2200, 1, 1, tzinfo=UTC)) == datetime(2090, 1, 1, tzinfo=UTC)
    every_eleven_years = build_timing(kind="interval", rule="4018d", anchor=NOW, timezone="UTC")
    assert next_after(every_eleven_years, NOW) == NOW + timedelta(days=4018)


def test_a_rule_that_ends_is_not_searched_past_its_end() -> None:
    timing = build_timing(
        kind="cron",
        rule="0 9 * * *",
        timezone="UTC",
        window="SAT 01:08-01:09",
        window_policy="skip",
        ends_at=NOW + timedelta(days=30),
        budget=SearchBudget(candidates=100),
    )
    assert next_after(timing, NOW) is None  # 30 candidates, then the end: no error


def test_a_range_is_not_searched_past_its_end() -> None:
    timing, rule = finding()
    assert slots_between(timing, NOW, NOW + timedelta(days=30)) == []
    assert len(rule.asked) <= 40


@pytest.mark.parametrize(("candidates", "days"), [(-1, 1), (10, 0), (True, 1)])
def test_a_budget_without_room_is_refused(candidates: int, days: int) -> None:
    with pytest.raises((ValueError, TypeError)):
        SearchBudget(candidates=candidates, span=timedelta(days=days))


def test_the_engines_end_guesses_still_answer_none_and_validation_still_refuses() -> None:
    never = build_timing(kind="solar", rule="sunset 89.99 -179.9", timezone="UTC")
    assert next_after(never, NOW) is None
    with pytest.raises(InvalidRule) as caught:
        first_slot(never, NOW)
    assert caught.value.code == "never_fires"


# --- review 5: a sub-daily RRULE whose INTERVAL meets its day filter once in centuries -------


def test_a_subdaily_rule_that_rarely_meets_its_days_is_charged_for_each_day() -> None:
    """``FREQ=HOURLY;INTERVAL=29989;BYDAY=MO;BYHOUR=0`` matches every Monday but fires about
    once in 575 years: every Monday looked at was free (the validation took 21.8 s, the
    beat's next slot 13.6 s). Each day is now charged: the span runs out after ten years of
    Mondays, with the typed error, instead of a walk to the year 2601."""
    anchor = datetime(2026, 12, 7, tzinfo=UTC)
    timing = build_timing(
        kind="rrule",
        rule="FREQ=HOURLY;INTERVAL=29989;BYDAY=MO;BYHOUR=0",
        timezone="UTC",
        anchor=anchor,
        budget=SearchBudget(candidates=100_000, span=timedelta(days=3653)),
    )
    with pytest.raises(SearchExhausted):
        next_after(timing, anchor)
    with pytest.raises(SearchExhausted):
        first_slot(timing, anchor - timedelta(days=1))


def test_a_subdaily_rule_with_days_still_finds_its_slots() -> None:
    timing = build_timing(
        kind="rrule",
        rule="FREQ=HOURLY;INTERVAL=5;BYDAY=MO,TH;BYHOUR=9,14",
        timezone="Europe/Riga",
        anchor=datetime(2027, 1, 4, 7, tzinfo=UTC),
    )
    found = slots_between(
        timing, datetime(2027, 1, 4, tzinfo=UTC), datetime(2027, 3, 1, tzinfo=UTC), limit=5
    )
    assert found and all(s.astimezone(ZoneInfo("Europe/Riga")).hour in (9, 14) for s in found)


def test_the_slot_before_a_dense_rule_months_back_is_found_in_a_few_short_walks() -> None:
    """Every minute of January to March, asked on October 31: the slot before is March 31
    23:59 (Riga, UTC+3 by then). The search used to walk every minute of the months between
    (129,600 candidates, past the budget: SearchExhausted, found by the property test)."""
    timing = build_timing(
        kind="cron",
        rule="* * * 1-3 *",
        timezone="Europe/Riga",
        budget=SearchBudget(candidates=2_000),
    )
    asked = datetime(2010, 10, 31, 1, tzinfo=UTC)
    assert previous_slot(timing, asked) == datetime(2010, 3, 31, 20, 59, tzinfo=UTC)
    assert previous_slot(timing, datetime(2010, 2, 1, tzinfo=UTC)) == datetime(
        2010, 2, 1, tzinfo=UTC
    )
    assert previous_slot(timing, datetime(2010, 2, 1, tzinfo=UTC), inclusive=False) == datetime(
        2010, 1, 31, 23, 59, tzinfo=UTC
    )


# --- security review 9: the work no candidate count sees ----------------------------------------

YEAR_400 = datetime(400, 1, 1, tzinfo=UTC)
FEB_29_MONDAYS = (
    "FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO;BYHOUR=0;BYMINUTE=0;BYSECOND=0;COUNT=1000000"
)
"""Review 9 (High): each slot costs dateutil ~8 ms of steps between candidates it never hands
out; counted from year 400 its validation took 30.8 s of CPU (63 s for an admin add POST)."""


def test_a_rule_whose_every_candidate_costs_milliseconds_is_refused_at_the_cpu_bound() -> None:
    timing = build_timing(kind="rrule", rule=FEB_29_MONDAYS, anchor=YEAR_400, timezone="UTC")
    with pytest.raises(SearchExhausted) as caught:
        first_slot(timing, NOW)
    assert caught.value.exhausted == "time"
    assert "s of CPU" in caught.value.message and "SCHEDULER_SEARCH_SECONDS" in caught.value.message


def test_the_cpu_bound_stops_a_walk_the_candidates_allow() -> None:
    """A millisecond of CPU against a walk of thousands of candidates (a one-minute window a
    week on an every-minute rule, with holidays): the time runs out first."""
    timing = build_timing(
        kind="cron",
        rule="* * * * *",
        timezone="Europe/Riga",
        exclude_holidays="LV",
        budget=SearchBudget(candidates=1_000_000, seconds=0.001),
    )
    with pytest.raises(SearchExhausted) as caught:
        slots_between(timing, datetime(2026, 12, 20, tzinfo=UTC), datetime(2027, 1, 10, tzinfo=UTC))
    assert caught.value.exhausted in ("time", "total")


@pytest.mark.parametrize("seconds", [0, -1.0, True, "1"])
def test_the_cpu_bound_must_be_a_positive_number(seconds: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        SearchBudget(seconds=seconds)  # type: ignore[arg-type]
