"""Active windows jump to their next opening: same slots, a bounded number of rule evaluations.

Costs are counted (rule items pulled), never timed: an every-10-seconds rule with a weekly
one-hour window used to walk 60,000 slots per question.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from itertools import islice

import pytest

from scheduler_app.timing import Timing, build_timing, next_after
from scheduler_app.timing.backward import first_slot
from scheduler_app.timing.engine import SearchExhausted, iter_annotated
from scheduler_app.timing.rrule_days import days_of_year as _days_of_year
from scheduler_app.timing.windows import MAX_CLOSED, apply_windows
from scheduler_app.timing.zones import Resolved

ANCHOR = datetime(2026, 1, 1, tzinfo=UTC)


class Counted:
    """The rule's items without windows, as the engine gives them, counting what is pulled."""

    def __init__(self, timing: Timing) -> None:
        self.bare = dataclasses.replace(timing, window=None)
        self.pulled = 0
        self.restarts = 0

    def items(self, after: datetime) -> Iterator[Resolved]:
        for item in iter_annotated(self.bare, after):
            self.pulled += 1
            yield item

    def restart(self, after: datetime) -> Iterator[Resolved]:
        self.restarts += 1
        return self.items(after)


def windowed(timing: Timing, after: datetime, n: int, *, jump: bool) -> tuple[list[Resolved], int]:
    source = Counted(timing)
    assert timing.window is not None
    items = apply_windows(
        source.items(after),
        timing.window,
        timing.zone,
        restart=source.restart if jump else None,
    )
    return list(islice(items, n)), source.pulled


def timing(kind: str, rule: object, window: str, policy: str, zone: str = "Europe/Riga") -> Timing:
    return build_timing(
        kind=kind,
        rule=rule,  # type: ignore[arg-type]
        anchor=ANCHOR,
        timezone=zone,
        window=window,
        window_policy=policy,
    )


RULES = [
    ("interval", 10, "* 09:00-09:02"),
    ("interval", 3600 * 25, "MON-FRI 09:00-18:00"),
    ("cron", "* * * * *", "SUN 03:00-03:02; MON-SAT 09:00-09:02"),
    ("cron", "*/5 * * * *", "SUN 03:00-03:45; SUN 02:00-02:30"),
    ("cron", "0 7,10 * * *", "MON-FRI 09:00-18:00"),
    ("cron", "30 2 * * *", "* 02:00-03:00"),
    ("rrule", "FREQ=MINUTELY;INTERVAL=3", "MON-FRI 09:00-09:10; TUE 13:00-13:30"),
    ("rrule", "FREQ=HOURLY;BYDAY=MO,WE;BYMINUTE=0,20,40", "WED 08:30-09:30"),
    ("rrule", "FREQ=MONTHLY;BYMONTHDAY=13;BYHOUR=9", "FRI 09:00-10:00"),
]
STARTS = [
    datetime(2026, 3, 3, 12, tzinfo=UTC),
    datetime(2026, 3, 28, 23, 30, tzinfo=UTC),  # the night the clocks go forward (Riga, Sydney)
    datetime(2026, 10, 24, 23, 50, tzinfo=UTC),  # the night they go back in Riga
    datetime(2026, 10, 31, 23, tzinfo=UTC),  # and in New York
]


@pytest.mark.parametrize("policy", ["skip", "defer"])
@pytest.mark.parametrize("zone", ["Europe/Riga", "America/New_York", "Australia/Lord_Howe"])
@pytest.mark.parametrize(("kind", "rule", "window"), RULES)
def test_jumping_to_the_next_opening_gives_the_slots_the_walk_gives(
    kind: str, rule: object, window: str, zone: str, policy: str
) -> None:
    rule_timing = timing(kind, rule, window, policy, zone)
    for start in STARTS:
        walked, _ = windowed(rule_timing, start, 12, jump=False)
        jumped, _ = windowed(rule_timing, start, 12, jump=True)
        assert jumped == walked, (start, kind, rule, window)


def test_a_fall_back_hour_inside_the_window_is_not_jumped_over() -> None:
    # Riga goes from 04:00 EEST back to 03:00 EET on 2026-10-25: 03:00-03:45 happens twice.
    # At 03:45 EEST the next opening by the wall clock is a week away, but an hour later the
    # wall clock is back in the window.
    rule_timing = timing("cron", "*/15 * * * *", "SUN 03:00-03:45", "skip")
    items, _ = windowed(rule_timing, datetime(2026, 10, 24, 23, 50, tzinfo=UTC), 6, jump=True)
    assert [slot for slot, _, _ in items] == [
        datetime(2026, 10, 25, 0, 0, tzinfo=UTC),  # 03:00 EEST
        datetime(2026, 10, 25, 0, 15, tzinfo=UTC),
        datetime(2026, 10, 25, 0, 30, tzinfo=UTC),
        datetime(2026, 10, 25, 1, 0, tzinfo=UTC),  # 03:00 EET, the second time
        datetime(2026, 10, 25, 1, 15, tzinfo=UTC),
        datetime(2026, 10, 25, 1, 30, tzinfo=UTC),
    ]


@pytest.mark.parametrize("policy", ["skip", "defer"])
@pytest.mark.parametrize(
    ("kind", "rule"),
    [("interval", 10), ("interval", 30), ("cron", "* * * * *"), ("rrule", "FREQ=MINUTELY")],
)
def test_a_dense_rule_costs_a_few_evaluations_per_closed_period(
    kind: str, rule: object, policy: str
) -> None:
    rule_timing = timing(kind, rule, "MON 09:00-09:01", policy)
    start = datetime(2026, 3, 3, 12, tzinfo=UTC)  # a Tuesday: six closed days ahead
    walked, walked_cost = windowed(rule_timing, start, 3, jump=False)
    jumped, jumped_cost = windowed(rule_timing, start, 3, jump=True)
    assert jumped == walked
    assert walked_cost > 8_000  # the slot-by-slot walk: every slot of the week
    assert jumped_cost <= 20  # one jump to Monday 09:00, then the slots inside the window


def test_a_rule_that_never_meets_a_skip_window_ends_after_a_bounded_search() -> None:
    # Even minutes against a one-minute window at an odd minute: every slot needs a jump.
    rule_timing = timing("cron", "*/2 * * * *", "* 09:01-09:02", "skip")
    source = Counted(rule_timing)
    calls: list[str] = []
    assert rule_timing.window is not None
    items = apply_windows(
        source.items(ANCHOR),
        rule_timing.window,
        rule_timing.zone,
        restart=source.restart,
        exhausted=lambda: calls.append("exhausted"),
    )
    assert list(items) == []
    assert calls == ["exhausted"]
    assert source.restarts <= MAX_CLOSED
    assert source.pulled <= 2 * MAX_CLOSED + 2


def test_a_sparse_rule_restarts_only_where_a_slot_comes_before_the_opening() -> None:
    # Daily 07:00 against business hours: on weekdays the next slot is past the opening
    # already (no restart); only Saturday's jump to Monday passes Sunday's slot.
    rule_timing = timing("cron", "0 7 * * *", "MON-FRI 09:00-18:00", "skip")
    source = Counted(rule_timing)
    assert rule_timing.window is not None
    items = apply_windows(
        source.items(ANCHOR), rule_timing.window, rule_timing.zone, restart=source.restart
    )
    assert list(items) == []
    assert 0 < source.restarts <= MAX_CLOSED // 4
    assert source.pulled <= MAX_CLOSED + source.restarts


def test_a_sub_daily_rrule_with_only_bymonth_fires_on_every_day_of_the_month() -> None:
    # The day filter once took the day of month from the probe's DTSTART (the 1st).
    rule_timing = build_timing(
        kind="rrule", rule="FREQ=HOURLY;INTERVAL=5;BYMONTH=3", anchor=ANCHOR, timezone="UTC"
    )
    assert next_after(rule_timing, datetime(2026, 3, 1, 20, tzinfo=UTC)) == datetime(
        2026, 3, 2, 0, tzinfo=UTC
    )


def test_the_matching_days_of_a_year_are_computed_once() -> None:
    _days_of_year.cache_clear()
    rule_timing = build_timing(
        kind="rrule", rule="FREQ=MINUTELY;INTERVAL=7;BYDAY=MO,TH", anchor=ANCHOR, timezone="UTC"
    )
    for day in range(60):
        next_after(rule_timing, ANCHOR + timedelta(days=day, hours=5))
    info = _days_of_year.cache_info()
    assert (info.misses, info.hits) == (1, 59)


# --- through the engine ---


def test_next_after_with_a_weekly_window_evaluates_a_few_slots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rule_timing = timing("interval", 10, "MON 09:00-10:00", "skip")
    assert rule_timing.window is not None
    looked_at: list[datetime] = []
    contains = type(rule_timing.window).contains

    def counting(self: object, local: datetime) -> bool:
        looked_at.append(local)
        return contains(self, local)  # type: ignore[arg-type]

    monkeypatch.setattr(type(rule_timing.window), "contains", counting)
    found = next_after(rule_timing, datetime(2026, 3, 3, 12, tzinfo=UTC))
    assert found == datetime(2026, 3, 9, 7, tzinfo=UTC)  # Monday 09:00 EET
    assert len(looked_at) <= 10


def test_validation_still_calls_a_never_meeting_skip_window_never_fires() -> None:
    rule_timing = timing("cron", "*/2 * * * *", "* 09:01-09:02", "skip")
    with pytest.raises(SearchExhausted) as caught:
        first_slot(rule_timing, ANCHOR)
    assert caught.value.code == "never_fires"
    assert next_after(rule_timing, ANCHOR) is None
