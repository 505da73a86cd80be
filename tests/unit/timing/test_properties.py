"""Property tests: the engine against a brute-force oracle that walks every minute.

The oracle never calls the engine or the cron parser: cron rules are generated together with
the sets of values they allow, and the oracle maps local wall times to instants by walking
UTC minutes and looking at the zone's wall clock.
"""

from __future__ import annotations

import calendar
import itertools
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from scheduler_app.errors import InvalidRule
from scheduler_app.timing import (
    Timing,
    build_timing,
    next_after,
    previous_slot,
    slots_between,
)

ZONES = [
    "Europe/Riga",
    "Europe/Moscow",
    "America/New_York",
    "America/Santiago",
    "Australia/Sydney",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "Pacific/Apia",
    "Africa/Casablanca",
    "Europe/London",
    "America/Havana",  # midnight transitions
    "Antarctica/Troll",  # two-hour DST
    "Pacific/Chatham",  # +12:45 / +13:45
    "America/St_Johns",  # -03:30 / -02:30
    "UTC",
]
MINUTE = timedelta(minutes=1)
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@cache
def transitions(name: str) -> tuple[datetime, ...]:
    """UTC instants (to the second) at which ``name`` changes offset, 2010-2025."""
    zone = ZoneInfo(name)
    found = []
    t = datetime(2010, 1, 1, tzinfo=UTC)
    end = datetime(2026, 1, 1, tzinfo=UTC)
    step = timedelta(hours=12)
    previous = t.astimezone(zone).utcoffset()
    while t < end:
        nxt = t + step
        offset = nxt.astimezone(zone).utcoffset()
        if offset != previous:
            low, high = t, nxt
            while high - low > timedelta(seconds=1):
                mid = low + (high - low) // 2
                if mid.astimezone(zone).utcoffset() == previous:
                    low = mid
                else:
                    high = mid
            found.append(high)
            previous = offset
        t = nxt
    return tuple(found)


# --- generated cron rules: text together with the values it allows ------------------------


@dataclass(frozen=True)
class Field:
    text: str
    values: frozenset[int]


def _field(low: int, high: int, names: list[str] | None = None) -> st.SearchStrategy[Field]:
    def value_text(v: int) -> st.SearchStrategy[str]:
        if names is not None and v < len(names) and names[v]:
            name = names[v]
            return st.sampled_from([str(v), name, name.lower(), name.title()])
        return st.just(str(v))

    @st.composite
    def item(draw: st.DrawFn) -> Field:
        kind = draw(st.sampled_from(["value", "range", "range_step", "from_step"]))
        a = draw(st.integers(low, high))
        if kind == "value":
            return Field(draw(value_text(a)), frozenset({a}))
        if kind == "from_step":
            n = draw(st.integers(1, max(1, high - low)))
            return Field(f"{a}/{n}", frozenset(range(a, high + 1, n)))
        b = draw(st.integers(a, high))
        text = f"{draw(value_text(a))}-{draw(value_text(b))}"
        if kind == "range":
            return Field(text, frozenset(range(a, b + 1)))
        n = draw(st.integers(1, max(1, high - low)))
        return Field(f"{text}/{n}", frozenset(range(a, b + 1, n)))

    @st.composite
    def star_step(draw: st.DrawFn) -> Field:
        n = draw(st.integers(1, max(1, high - low)))
        return Field(f"*/{n}", frozenset(range(low, high + 1, n)))

    @st.composite
    def listed(draw: st.DrawFn) -> Field:
        items = draw(st.lists(item(), min_size=1, max_size=4))
        return Field(",".join(i.text for i in items), frozenset().union(*(i.values for i in items)))

    return st.one_of(
        st.just(Field("*", frozenset(range(low, high + 1)))), star_step(), item(), listed()
    )


MONTHS = ["", *[m.upper() for m in calendar.month_abbr[1:]]]
DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", ""]  # 7 is Sunday, by number only
STAR = Field("*", frozenset())


@dataclass(frozen=True)
class Cron:
    minute: Field
    hour: Field
    dom: Field
    month: Field
    dow: Field

    @property
    def text(self) -> str:
        fields = (self.minute, self.hour, self.dom, self.month, self.dow)
        return " ".join(f.text for f in fields)

    @property
    def star_style(self) -> bool:
        return self.minute.text.startswith("*") or self.hour.text.startswith("*")

    def matches(self, wall: datetime) -> bool:
        if wall.minute not in self.minute.values or wall.hour not in self.hour.values:
            return False
        if self.month.text != "*" and wall.month not in self.month.values:
            return False
        dom_ok = self.dom.text == "*" or wall.day in self.dom.values
        weekday = wall.isoweekday() % 7
        dow_ok = self.dow.text == "*" or weekday in {v % 7 for v in self.dow.values}
        if self.dom.text.startswith("*") or self.dow.text.startswith("*"):
            return dom_ok and dow_ok
        return dom_ok or dow_ok


def _days_field() -> st.SearchStrategy[Field]:
    return st.one_of(st.just(STAR), st.just(STAR), _field(1, 31))


crons = st.builds(
    Cron,
    minute=_field(0, 59),
    hour=st.one_of(
        _field(0, 23), st.sampled_from([Field(str(h), frozenset({h})) for h in (0, 1, 2, 3, 23)])
    ),
    dom=_days_field(),
    month=st.one_of(st.just(STAR), st.just(STAR), _field(1, 12, MONTHS)),
    dow=st.one_of(st.just(STAR), st.just(STAR), _field(0, 7, DAYS)),
)


@st.composite
def windows(draw: st.DrawFn) -> tuple[str, datetime, datetime]:
    """A zone and a window of up to three days that usually contains a transition."""
    name = draw(st.sampled_from(ZONES))
    known = transitions(name)
    if known:
        center = draw(st.sampled_from(known))
    else:
        center = datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=draw(st.integers(0, 365)))
    start = center - timedelta(minutes=draw(st.integers(0, 48 * 60)))
    length = timedelta(minutes=draw(st.integers(1, 72 * 60)))
    return name, start, start + length


# --- the oracle --------------------------------------------------------------------------------


def oracle(
    cron: Cron, zone_name: str, after: datetime, until: datetime, nonexistent: str, ambiguous: str
) -> list[datetime]:
    """Every slot in ``(after, until]`` by walking minutes; policies already resolved."""
    zone = ZoneInfo(zone_name)
    margin = timedelta(days=2)
    instants_of: dict[datetime, list[datetime]] = defaultdict(list)
    walk: list[tuple[datetime, datetime]] = []
    t = after.replace(second=0, microsecond=0) - margin
    while t <= until + margin:
        wall = t.astimezone(zone).replace(tzinfo=None)
        instants_of[wall].append(t)
        walk.append((t, wall))
        t += MINUTE
    result: set[datetime] = set()
    wall = walk[0][1] + margin / 2
    last_wall = walk[-1][1] - margin / 2
    position = 0
    while wall <= last_wall:
        if cron.matches(wall):
            found = instants_of.get(wall)
            if found:
                chosen = {"first": found[:1], "last": found[-1:], "both": found}[ambiguous]
                result.update(chosen)
            elif nonexistent != "skip":
                while walk[position][1] <= wall:
                    position += 1
                jump, _ = walk[position]
                if nonexistent == "next_valid":
                    result.add(jump)
                else:  # shift: read with the offset from before the gap
                    before = jump - MINUTE
                    offset = before.astimezone(zone).utcoffset()
                    assert offset is not None
                    result.add((wall - offset).replace(tzinfo=UTC))
        wall += MINUTE
    return sorted(s for s in result if after < s <= until)


def instant_walk(cron: Cron, zone_name: str, after: datetime, until: datetime) -> list[datetime]:
    """The '*' semantics stated plainly: every instant whose wall time matches."""
    zone = ZoneInfo(zone_name)
    t = after.replace(second=0, microsecond=0) + MINUTE
    found = []
    while t <= until:
        if cron.matches(t.astimezone(zone).replace(tzinfo=None)):
            found.append(t)
        t += MINUTE
    return found


def _timing(cron: Cron, zone: str, nonexistent: str = "auto", ambiguous: str = "auto") -> Timing:
    try:
        return build_timing(
            kind="cron",
            rule=cron.text,
            timezone=zone,
            nonexistent=nonexistent,
            ambiguous=ambiguous,
        )
    except InvalidRule as error:
        # Only day/month combinations that never happen may be refused.
        assert error.code == "never", (cron.text, error)
        assume(False)
        raise


POLICIES = st.tuples(
    st.sampled_from(["auto", "skip", "shift", "next_valid"]),
    st.sampled_from(["auto", "first", "last", "both"]),
)


@SETTINGS
@given(cron=crons, where=windows(), policies=POLICIES)
@example(
    cron=Cron(Field("*/15", frozenset(range(0, 60, 15))), Field("*", frozenset(range(24))),
              STAR, STAR, STAR),
    where=("Australia/Lord_Howe", datetime(2024, 10, 5, 14, tzinfo=UTC),
           datetime(2024, 10, 5, 17, tzinfo=UTC)),
    policies=("auto", "auto"),
)  # fmt: skip
def test_engine_matches_the_minute_walking_oracle(
    cron: Cron, where: tuple[str, datetime, datetime], policies: tuple[str, str]
) -> None:
    zone, after, until = where
    nonexistent, ambiguous = policies
    timing = _timing(cron, zone, nonexistent, ambiguous)
    if nonexistent == "auto":
        nonexistent = "skip" if cron.star_style else "next_valid"
    if ambiguous == "auto":
        ambiguous = "both" if cron.star_style else "first"
    expected = oracle(cron, zone, after, until, nonexistent, ambiguous)
    assert slots_between(timing, after, until) == expected, cron.text


@SETTINGS
@given(cron=crons.filter(lambda c: c.star_style), where=windows())
def test_star_crons_fire_at_every_matching_instant(
    cron: Cron, where: tuple[str, datetime, datetime]
) -> None:
    zone, after, until = where
    timing = _timing(cron, zone)
    assert slots_between(timing, after, until) == instant_walk(cron, zone, after, until)


@SETTINGS
@given(cron=crons, where=windows(), policies=POLICIES)
def test_next_after_previous_slot_and_slots_between_agree(
    cron: Cron, where: tuple[str, datetime, datetime], policies: tuple[str, str]
) -> None:
    zone, after, until = where
    timing = _timing(cron, zone, *policies)
    slots = slots_between(timing, after, until, limit=50)
    assert all(a < b for a, b in itertools.pairwise(slots))
    assert all(after < s <= until for s in slots)
    # Iterating next_after gives the same slots.
    walked: list[datetime] = []
    cursor = after
    while len(walked) < len(slots):
        nxt = next_after(timing, cursor)
        assert nxt is not None and nxt > cursor
        walked.append(nxt)
        cursor = nxt
    assert walked == slots
    if len(slots) < 50:
        nxt = next_after(timing, cursor)
        assert nxt is None or nxt > until
    # previous_slot is the last slot at or before an instant; next_after undoes it.
    for probe in (after, until, *slots[:3]):
        prev = previous_slot(timing, probe)
        assert prev is not None  # every generated rule fires at least once before 2026
        assert prev <= probe
        assert next_after(timing, prev) == next_after(timing, probe)
        if prev in slots or probe in slots:
            assert prev == max(s for s in [*slots, prev] if s <= probe)
