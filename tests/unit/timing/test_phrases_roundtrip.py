"""Property: for phrases generated from the grammar, the rule's English description
(``describe``) reads back to the same slots. The description is what the admin, the preview and
the docs show, so a user who copies it back as text gets the schedule they saw."""

from __future__ import annotations

from datetime import UTC, date, datetime

from hypothesis import example, given, settings
from hypothesis import strategies as st

from scheduler_app.timing import Timing, build_timing, describe, slots_between
from scheduler_app.timing.phrases import ParsedText, parse_text

ZONES = ("UTC", "Europe/Riga", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata")
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
ANCHOR = datetime(2027, 1, 4, 6, 0, tzinfo=UTC)
FROM = datetime(2027, 2, 20, tzinfo=UTC)
UNTIL = datetime(2029, 1, 1, tzinfo=UTC)

hours = st.integers(0, 23)
minutes = st.sampled_from([0, 5, 15, 30, 45])


@st.composite
def times(draw: st.DrawFn) -> str:
    chosen_hours = sorted(draw(st.sets(hours, min_size=1, max_size=3)))
    minute = draw(minutes)
    return " and ".join(f"{h}:{minute:02d}" for h in chosen_hours)


@st.composite
def day_words(draw: st.DrawFn) -> str:
    form = draw(st.sampled_from(["list", "weekdays", "weekend", "range"]))
    if form == "weekdays":
        return "every weekday"
    if form == "weekend":
        return "on weekends"
    if form == "range":
        first = draw(st.integers(0, 5))
        last = draw(st.integers(first + 1, 6))
        return f"{DAYS[first]} to {DAYS[last]}"
    chosen = sorted(draw(st.sets(st.integers(0, 6), min_size=1, max_size=4)))
    return "on " + " and ".join(DAYS[d] for d in chosen)


@st.composite
def phrases(draw: st.DrawFn) -> str:
    form = draw(
        st.sampled_from(
            ["days", "daily", "minutes", "hours", "nth", "last", "ndays", "nweeks", "once"]
        )
    )
    if form == "days":
        body = f"{draw(day_words())} at {draw(times())}"
    elif form == "daily":
        body = f"every day at {draw(times())}"
    elif form == "minutes":
        body = f"every {draw(st.sampled_from([1, 2, 5, 10, 15, 20, 30, 45, 90, 100]))} minutes"
    elif form == "hours":
        body = f"every {draw(st.sampled_from([1, 2, 3, 4, 6, 8, 12, 5, 7]))} hours"
    elif form == "nth":
        nth = draw(st.sampled_from(["first", "second", "third", "fourth", "last"]))
        body = f"on the {nth} {draw(st.sampled_from(DAYS))} of the month at {draw(times())}"
    elif form == "last":
        body = f"on the last day of the month at {draw(times())}"
    elif form == "ndays":
        body = f"every {draw(st.integers(2, 9))} days at {draw(times())}"
    elif form == "nweeks":
        chosen = sorted(draw(st.sets(st.integers(0, 6), min_size=1, max_size=3)))
        on = " and ".join(DAYS[d] for d in chosen)
        body = f"every {draw(st.integers(2, 5))} weeks on {on} at {draw(times())}"
    else:
        day = draw(st.dates(min_value=date(2027, 3, 1), max_value=date(2028, 12, 31)))
        body = f"on {day.day} {day:%B %Y} at {draw(hours)}:{draw(minutes):02d}"
    return f"{body} in {draw(st.sampled_from(ZONES))}"


def _timing(parsed: ParsedText) -> Timing:
    anchor = parsed.anchor or (ANCHOR if parsed.kind in ("rrule", "interval") else None)
    return build_timing(kind=parsed.kind, rule=parsed.rule, timezone=parsed.timezone, anchor=anchor)


@settings(max_examples=150, deadline=None)
@given(phrases())
@example(phrase="on monday and tuesday and sunday at 0:00 in UTC")  # SUN-TUE: a list, no range
def test_described_rule_reads_back_to_the_same_slots(phrase: str) -> None:
    timing = _timing(parse_text(phrase))
    described = describe(timing)
    again = _timing(parse_text(described))
    assert slots_between(again, FROM, UNTIL, 40) == slots_between(timing, FROM, UNTIL, 40), (
        phrase,
        described,
    )


def test_an_example_reads_back() -> None:
    timing = _timing(parse_text("every 2 weeks on monday and thursday at 9:00 in Europe/Riga"))
    described = describe(timing)
    assert described == (
        "Every 2 weeks on Monday and Thursday at 09:00, from 2027-01-04 08:00, Europe/Riga"
    )
    assert slots_between(_timing(parse_text(described)), FROM, UNTIL, 10) == slots_between(
        timing, FROM, UNTIL, 10
    )
