"""RRULE ``UNTIL`` in UTC is an inclusive bound on *instants* (RFC 5545 with a zoned DTSTART):
the slots of a rule with ``UNTIL=u`` are exactly the slots of the same rule without it that are
at or before ``u``, whichever side of a DST change ``u`` falls on and whatever the policies.

Checked around every transition of several zones (UNTIL at, just before and just after each
change), for both DST policies, against the rule without UNTIL as the oracle.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_app.timing import build_timing, slots_between

ZONES = ("America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "America/Santiago")
RULES = (
    "FREQ=HOURLY;BYMINUTE=30",  # every hour: meets the gap and the repeated hour
    "FREQ=DAILY;BYHOUR=2;BYMINUTE=30",  # a wall time inside the gap or the fold
    "FREQ=MINUTELY;INTERVAL=20",
)
NONEXISTENT = ("skip", "shift", "next_valid")
AMBIGUOUS = ("first", "last", "both")
ANCHOR = datetime(2025, 1, 1, tzinfo=UTC)


@cache
def transitions(zone_name: str) -> tuple[datetime, ...]:
    """Every instant in 2025-2026 at which the zone's UTC offset changes (to the minute)."""
    zone = ZoneInfo(zone_name)
    found = []
    instant = ANCHOR
    end = datetime(2027, 1, 1, tzinfo=UTC)
    while instant < end:
        following = instant + timedelta(hours=1)
        if instant.astimezone(zone).utcoffset() != following.astimezone(zone).utcoffset():
            low, high = instant, following
            while high - low > timedelta(minutes=1):
                middle = low + (high - low) / 2
                if middle.astimezone(zone).utcoffset() == low.astimezone(zone).utcoffset():
                    low = middle
                else:
                    high = middle
            found.append(high.replace(second=0, microsecond=0))
        instant = following
    return tuple(found)


def until_text(instant: datetime) -> str:
    return instant.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def check(zone: str, rule: str, until: datetime, nonexistent: str, ambiguous: str) -> None:
    until = until.replace(microsecond=0)
    common = {
        "kind": "rrule",
        "timezone": zone,
        "anchor": ANCHOR,
        "nonexistent": nonexistent,
        "ambiguous": ambiguous,
    }
    bounded = build_timing(rule=f"{rule};UNTIL={until_text(until)}", **common)
    open_ended = build_timing(rule=rule, **common)
    after, horizon = until - timedelta(days=2), until + timedelta(days=2)
    expected = [slot for slot in slots_between(open_ended, after, horizon) if slot <= until]
    assert slots_between(bounded, after, horizon) == expected


def test_every_zone_has_transitions_to_test() -> None:
    for zone in ZONES:
        assert len(transitions(zone)) >= 4, zone


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("policies", [("skip", "first"), ("shift", "both"), ("next_valid", "last")])
def test_until_at_just_before_and_just_after_every_transition(
    zone: str, rule: str, policies: tuple[str, str]
) -> None:
    for change in transitions(zone):
        for delta in (0, -1, 1, -1800, 1800, -3600, 3600, 5400):
            check(zone, rule, change + timedelta(seconds=delta), *policies)


@settings(max_examples=150, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    rule=st.sampled_from(RULES),
    index=st.integers(min_value=0, max_value=3),
    offset=st.integers(min_value=-4 * 3600, max_value=4 * 3600),
    nonexistent=st.sampled_from(NONEXISTENT),
    ambiguous=st.sampled_from(AMBIGUOUS),
)
def test_until_is_an_inclusive_bound_on_instants(
    zone: str, rule: str, index: int, offset: int, nonexistent: str, ambiguous: str
) -> None:
    change = transitions(zone)[index]
    check(zone, rule, change + timedelta(seconds=offset), nonexistent, ambiguous)


def test_the_reported_fall_back_case_keeps_the_slot_before_until() -> None:
    # New York falls back on 2025-11-02 at 06:00 UTC (02:00 EDT -> 01:00 EST). With UNTIL at
    # 06:15Z, the 01:30 EDT slot (05:30Z) is before UNTIL and the 01:30 EST one (06:30Z) after.
    timing = build_timing(
        kind="rrule",
        rule="FREQ=HOURLY;BYMINUTE=30;UNTIL=20251102T061500Z",
        timezone="America/New_York",
        anchor=ANCHOR,
        ambiguous="both",
    )
    last = slots_between(
        timing, datetime(2025, 11, 2, tzinfo=UTC), datetime(2025, 11, 3, tzinfo=UTC)
    )
    assert last[-1] == datetime(2025, 11, 2, 5, 30, tzinfo=UTC)


def test_the_reported_spring_forward_case_emits_nothing_after_until() -> None:
    # 2025-03-09: 02:30 does not exist in New York; "shift" makes it 03:30 EDT = 07:30Z.
    # UNTIL 07:00Z is before that instant, so the shifted slot is not emitted.
    timing = build_timing(
        kind="rrule",
        rule="FREQ=DAILY;BYHOUR=2;BYMINUTE=30;UNTIL=20250309T070000Z",
        timezone="America/New_York",
        anchor=ANCHOR,
        nonexistent="shift",
    )
    slots = slots_between(
        timing, datetime(2025, 3, 7, tzinfo=UTC), datetime(2025, 3, 11, tzinfo=UTC)
    )
    assert slots and max(slots) <= datetime(2025, 3, 9, 7, 0, tzinfo=UTC)
