"""Counted walks resume at their marks (security review 8, Medium: sixty schedules with a
``max_count`` of a million started days ago cost a fifth of a second each on every question,
every tick, and starved the beat for every tenant).

Work is counted, never timed (``counting`` counts the candidates the engine walks)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_app.errors import SearchExhausted
from scheduler_app.timing import build_timing, next_after, previous_slot, slots_between
from scheduler_app.timing.budget import SearchBudget
from scheduler_app.timing.checkpoints import COUNTED, EVERY, Checkpoints
from scheduler_app.timing.rules import Timing
from tests.unit.timing.test_search_budget_properties import counting

NOW = datetime(2026, 12, 6, 9, 0, tzinfo=UTC)
BEGAN = NOW - timedelta(days=11)


@pytest.fixture(autouse=True)
def _no_marks() -> Iterator[None]:
    COUNTED.clear()
    yield
    COUNTED.clear()


def the_findings(candidates: int | None = None) -> list[Timing]:
    """Every ten seconds from 11 days ago, counted to a million: by ``max_count`` and by COUNT."""
    # Work is counted here, not timed: a CPU bound far above what the walks take.
    search = SearchBudget(candidates=candidates or 100_000, seconds=60.0)
    return [
        build_timing(
            kind="rrule",
            rule="FREQ=SECONDLY;INTERVAL=10",
            anchor=BEGAN,
            starts_at=BEGAN,
            max_count=1_000_000,
            timezone="UTC",
            budget=search,
        ),
        build_timing(
            kind="rrule",
            rule="FREQ=SECONDLY;INTERVAL=10;COUNT=1000000",
            anchor=BEGAN,
            timezone="UTC",
            budget=search,
        ),
    ]


@pytest.mark.parametrize("which", [0, 1], ids=["max_count", "COUNT"])
def test_the_second_question_walks_from_the_last_mark_not_the_origin(which: int) -> None:
    timing = the_findings()[which]
    with counting() as first:
        assert next_after(timing, NOW) == NOW + timedelta(seconds=10)
    assert first.total > 90_000  # 11 days of slots every 10 s, walked once
    for tick in range(1, 7):  # the beat's next questions, a minute apart
        with counting() as later:
            at = NOW + timedelta(minutes=tick)
            assert next_after(timing, at) == at + timedelta(seconds=10)
        assert later.total <= 2 * EVERY + 20, later.total


@pytest.mark.parametrize("which", [0, 1], ids=["max_count", "COUNT"])
def test_a_walk_the_budget_stops_leaves_no_mark_so_the_refusal_stays(which: int) -> None:
    timing = the_findings(candidates=50_000)[which]
    for _ in range(3):
        with pytest.raises(SearchExhausted):
            next_after(timing, NOW)


def test_a_count_still_ends_where_it_ends_when_resumed() -> None:
    timing = build_timing(  # the walk's candidates bound it, not a busy machine's CPU time
        kind="rrule",
        rule="FREQ=MINUTELY;INTERVAL=7;COUNT=2000",
        anchor=BEGAN,
        timezone="UTC",
        budget=SearchBudget(seconds=60.0),
    )
    last = BEGAN + timedelta(minutes=7 * 1999)
    assert previous_slot(timing, NOW + timedelta(days=30)) == last  # walks it all, marks it
    assert next_after(timing, last - timedelta(seconds=1)) == last
    assert next_after(timing, last) is None


def answers(timing: Timing, asked: list[datetime]) -> list[object]:
    """Each question's answer, or the kind of error it ended with."""
    found: list[object] = []
    for at in asked:
        for question, arguments in (
            (slots_between, (at, at + timedelta(days=20), 30)),
            (next_after, (at,)),
            (previous_slot, (at,)),
        ):
            try:
                found.append(question(timing, *arguments))
            except SearchExhausted:
                found.append(SearchExhausted)
    return found


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rule=st.sampled_from(
        [
            "FREQ=MINUTELY;INTERVAL=13;COUNT=5000",
            "FREQ=HOURLY;BYMINUTE=0,20;BYDAY=MO,WE;COUNT=3000",
            "FREQ=DAILY;BYHOUR=9,17;BYSETPOS=-1;COUNT=900",
            "FREQ=WEEKLY;BYDAY=MO,FR;BYHOUR=3;COUNT=700",
        ]
    ),
    zone=st.sampled_from(["UTC", "Europe/Riga", "America/New_York"]),
    max_count=st.one_of(st.none(), st.integers(1, 4000)),
    window=st.sampled_from([None, "MON-FRI 08:00-18:00"]),
    offsets=st.lists(st.integers(0, 400 * 24), min_size=2, max_size=5),
)
def test_with_marks_the_answers_are_those_of_walks_from_the_origin(
    rule: str, zone: str, max_count: int | None, window: str | None, offsets: list[int]
) -> None:
    fields: dict[str, Any] = {"starts_at": BEGAN, "max_count": max_count} if max_count else {}
    # Work is counted, not timed: the default CPU bound (a quarter second) could end the first
    # of the two walks alone on a busy machine (a full run saw "marked" give up where "plain"
    # did not).
    timing = build_timing(
        kind="rrule",
        rule=rule,
        anchor=BEGAN,
        timezone=zone,
        window=window,
        budget=SearchBudget(seconds=60.0),
        **fields,
    )
    asked = [BEGAN + timedelta(hours=hours) for hours in offsets]
    with_marks = answers(timing, asked)
    COUNTED.clear()
    with mock.patch.object(COUNTED, "note", lambda *args, **kwargs: None):
        unmarked = answers(timing, asked)
    # A question the walk from the origin answers, the marks answer alike; the marks may
    # answer one that the walk from the origin gives up on (a window restarting a count).
    assert all(
        plain is SearchExhausted or marked == plain
        for marked, plain in zip(with_marks, unmarked, strict=True)
    ), (with_marks, unmarked)


def test_marks_are_kept_per_rule_thinned_and_bounded() -> None:
    marks = Checkpoints(rules=2, per_rule=4)
    for count in range(1, 11):
        marks.note("a", BEGAN + timedelta(minutes=count), count * EVERY)
    kept = [marks.before("a", NOW, inclusive=True)]
    assert kept[0] == (BEGAN + timedelta(minutes=10), 10 * EVERY)
    assert marks.before("a", BEGAN + timedelta(minutes=1), inclusive=False) is None
    marks.note("b", BEGAN, 1)
    marks.note("c", BEGAN, 1)  # three rules: the least recently used ("a") goes
    assert marks.before("a", NOW, inclusive=True) is None
    assert marks.before("c", BEGAN, inclusive=True) == (BEGAN, 1)
    assert marks.before("c", BEGAN, inclusive=False) is None
