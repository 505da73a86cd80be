"""The builder writes cron/RRULE the engine understands, and reads them back (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from scheduler_app.admin.builder import BuilderError, BuilderSpec, from_rule, to_rule
from scheduler_app.timing import build_timing, next_after

CASES = [
    (BuilderSpec(repeat="minutes", every=15), ("cron", "*/15 * * * *")),
    (BuilderSpec(repeat="minutes", every=1), ("cron", "* * * * *")),
    (BuilderSpec(repeat="minutes", every=7), ("interval", "420")),
    (BuilderSpec(repeat="hours", every=6), ("cron", "0 */6 * * *")),
    (BuilderSpec(repeat="hours", every=5), ("interval", "18000")),
    (BuilderSpec(repeat="daily", at_times=((9, 0), (17, 0))), ("cron", "0 9,17 * * *")),
    (
        BuilderSpec(repeat="weekly", at_times=((8, 30),), weekdays=("MO", "WE", "FR")),
        ("cron", "30 8 * * MON,WED,FRI"),
    ),
    (
        BuilderSpec(repeat="monthly", at_times=((6, 0),), monthly_on="day", month_day=15),
        ("cron", "0 6 15 * *"),
    ),
    (
        BuilderSpec(repeat="monthly", at_times=((17, 0),), monthly_on="last"),
        ("rrule", "FREQ=MONTHLY;BYMONTHDAY=-1;BYHOUR=17;BYMINUTE=0;BYSECOND=0"),
    ),
    (
        BuilderSpec(
            repeat="monthly", at_times=((9, 0),), monthly_on="nth", nth=1, nth_weekday="MO"
        ),
        ("rrule", "FREQ=MONTHLY;BYDAY=1MO;BYHOUR=9;BYMINUTE=0;BYSECOND=0"),
    ),
    (
        BuilderSpec(repeat="once", once_at=datetime(2027, 3, 28, 2, 30)),
        ("once", "2027-03-28T02:30:00"),
    ),
]


@pytest.mark.parametrize(("spec", "expected"), CASES)
def test_each_choice_writes_a_rule_and_reads_back(
    spec: BuilderSpec, expected: tuple[str, str]
) -> None:
    assert to_rule(spec) == expected
    assert from_rule(*expected) == spec


@pytest.mark.parametrize(("spec", "expected"), CASES)
def test_every_written_rule_is_one_the_engine_accepts(
    spec: BuilderSpec, expected: tuple[str, str]
) -> None:
    kind, rule = expected
    anchor = datetime(2026, 1, 1, tzinfo=UTC) if kind in ("rrule", "interval") else None
    timing = build_timing(kind=kind, rule=rule, timezone="Europe/Riga", anchor=anchor)
    assert next_after(timing, datetime(2026, 1, 1, tzinfo=UTC)) is not None


def test_the_last_day_rule_runs_at_the_chosen_minute_without_seconds() -> None:
    _, rule = to_rule(BuilderSpec(repeat="monthly", at_times=((17, 0),), monthly_on="last"))
    anchor = datetime(2026, 1, 1, 0, 0, 43, tzinfo=UTC)  # an anchor with stray seconds
    timing = build_timing(kind="rrule", rule=rule, timezone="UTC", anchor=anchor)
    assert next_after(timing, anchor) == datetime(2026, 1, 31, 17, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("kind", "rule"),
    [
        ("cron", "0 9 * 1 *"),  # a month restriction
        ("cron", "0 9-17 * * *"),  # a range
        ("cron", "0 9 1 * MON"),  # both day fields
        ("rrule", "FREQ=WEEKLY;BYDAY=MO"),
        ("interval", "90"),
        ("once", "2027-01-01T00:00:00+00:00"),  # an instant, not a local time
    ],
)
def test_rules_the_builder_cannot_express_open_in_advanced_mode(kind: str, rule: str) -> None:
    assert from_rule(kind, rule) is None


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        (BuilderSpec(repeat="daily", at_times=((9, 0), (17, 30))), "at_times", "combination"),
        (BuilderSpec(repeat="weekly", at_times=((9, 0),)), "weekdays", "weekday"),
        (BuilderSpec(repeat="minutes"), "every", "whole number"),
        (BuilderSpec(repeat="once"), "once_at", "date and time"),
        (
            BuilderSpec(repeat="monthly", at_times=((9, 0),), monthly_on="day", month_day=32),
            "month_day",
            "1 to 31",
        ),
    ],
)
def test_impossible_choices_name_the_field(spec: BuilderSpec, field: str, words: str) -> None:
    with pytest.raises(BuilderError) as error:
        to_rule(spec)
    assert error.value.field == field and words in error.value.message
