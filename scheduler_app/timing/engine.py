"""The slot engine: which instants a ``Timing`` fires at. Pure; callers pass every instant.

The rule's own candidate times come from ``walks.py``; here they pass the active windows,
the holidays, ``max_count`` and the bounds, and every question (the next slot, a range; the
previous slot and validation's first slot in ``backward.py``) is asked under the timing's
search budget (``budget.py``): each candidate is charged to a ``Meter``, which raises
``SearchExhausted`` when the question has used up its candidates or looked past its span.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from functools import partial
from itertools import islice
from zoneinfo import ZoneInfo

from scheduler_app.errors import InvalidRule
from scheduler_app.errors import SearchExhausted as SearchExhausted
from scheduler_app.timing.budget import Meter
from scheduler_app.timing.calendars.public_holidays import HolidayCalendar
from scheduler_app.timing.checkpoints import COUNTED, NO_MARKS, Walk
from scheduler_app.timing.rules import RRuleRule, Timing
from scheduler_app.timing.walks import merge_locals, rule_items
from scheduler_app.timing.windows import MAX_CLOSED, ActiveWindows, apply_windows
from scheduler_app.timing.zones import TICK, Resolved, ensure_aware

__all__ = [
    "SearchExhausted",
    "holiday_skips",
    "iter_annotated",
    "iter_slots",
    "merge_locals",
    "next_after",
    "slots_between",
]


def next_after(timing: Timing, instant: datetime) -> datetime | None:
    """The first slot strictly after ``instant``, or None when the rule has no more.

    Raises ``SearchExhausted`` when the search uses up the timing's budget."""
    for slot, _, _ in iter_annotated(timing, instant):
        return slot
    return None


def iter_slots(timing: Timing, after: datetime) -> Iterator[datetime]:
    """Every slot strictly after ``after``, in increasing order (possibly endless); the search
    for each one is bounded by the timing's budget."""
    return (slot for slot, _, _ in iter_annotated(timing, after))


def slots_between(
    timing: Timing, after: datetime, until: datetime, limit: int | None = None
) -> list[datetime]:
    """Slots ``s`` with ``after < s <= until``, oldest first, at most ``limit`` of them."""
    bounded = iter_between(timing, after, until)
    return list(islice(bounded, limit) if limit is not None else bounded)


def iter_between(
    timing: Timing, after: datetime, until: datetime, *, ceiling: int | None = None
) -> Iterator[datetime]:
    """``slots_between`` one slot at a time: a caller with its own bound (a forecast's time)
    stops between any two slots; the search never looks past ``until``. ``ceiling``: the
    candidates of all the slots together (``SearchExhausted`` past it)."""
    after = ensure_aware(after, "after")
    until = ensure_aware(until, "until")
    meter = timing.budget.meter(after, stop_at=_earlier(until, timing.ends_at), ceiling=ceiling)
    return up_to((slot for slot, _, _ in _annotated(timing, after, meter)), until)


def _earlier(first: datetime, second: datetime | None) -> datetime:
    return first if second is None else min(first, second)


def iter_annotated(
    timing: Timing, after: datetime, *, ceiling: int | None = None
) -> Iterator[Resolved]:
    """Like ``iter_slots`` but each item is ``(slot, local wall time, DST note or None)``.
    ``ceiling``: the candidates of all the slots together (``SearchExhausted`` past it)."""
    after = ensure_aware(after, "after")
    meter = timing.budget.meter(after, stop_at=timing.ends_at, ceiling=ceiling)
    return _annotated(timing, after, meter)


def _annotated(timing: Timing, after: datetime, meter: Meter) -> Iterator[Resolved]:
    if timing.starts_at is not None and timing.starts_at > after:
        after = timing.starts_at - TICK
        meter.origin = max(meter.origin, after)  # the search starts where the rule does
    items = (
        _counted(timing, after, meter)
        if timing.max_count is not None
        else _effective(timing, after, meter)
    )
    if timing.ends_at is not None:
        items = _stop_after(items, timing.ends_at)
    return _handed_out(items, meter)


def _handed_out(items: Iterable[Resolved], meter: Meter) -> Iterator[Resolved]:
    for item in items:
        meter.found(item[0])
        yield item


def _stop_after(items: Iterable[Resolved], ends_at: datetime) -> Iterator[Resolved]:
    for item in items:
        if item[0] > ends_at:
            return
        yield item


def up_to(slots: Iterable[datetime], until: datetime) -> Iterator[datetime]:
    """The slots of an ascending stream up to ``until`` (inclusive): it stops at a later one."""
    for slot in slots:
        if slot > until:
            return
        yield slot


def _counted(timing: Timing, after: datetime, meter: Meter) -> Iterator[Resolved]:
    origin = timing.origin
    if origin is None or timing.max_count is None:
        raise InvalidRule("max_count", "max_count needs starts_at to count slots from")
    rule = timing.rule
    heavy = isinstance(rule, RRuleRule) and len(rule.spec.rdates) + len(rule.spec.exdates) > 64
    # A timing that holds many dates is not kept as a key (memory); it walks from its start.
    walk, since = Walk.resume(NO_MARKS if heavy else COUNTED, timing, after, inclusive=True)
    start = min(after, origin - TICK) if since is None else since
    for item in _effective(timing, start, meter):
        if walk.used == timing.max_count:
            return
        walk.step(item[0])
        if item[0] > after:
            walk.reached(item[0])
            yield item


def _effective(timing: Timing, after: datetime, meter: Meter) -> Iterator[Resolved]:
    """The rule's slots, passed through the active windows and the holidays, when the timing
    has some."""
    if timing.window is None:
        items = _raw(timing, after, meter)
    else:
        items = _windowed(timing, timing.window, after, meter)
    if timing.holidays is None:
        return items
    return _off_holidays(items, timing.holidays, timing.zone)


def _off_holidays(
    items: Iterable[Resolved], calendar: HolidayCalendar, zone: ZoneInfo
) -> Iterator[Resolved]:
    """Leave out the slots whose local date (in the schedule's zone) is a public holiday."""
    day, holiday = None, False  # slots come in order: one look-up per local date
    for item in items:
        local_day = item[0].astimezone(zone).date()
        if local_day != day:
            day, holiday = local_day, calendar.name_on(local_day) is not None
        if not holiday:
            yield item


def holiday_skips(
    timing: Timing, after: datetime, until: datetime, limit: int | None = None
) -> list[tuple[datetime, str]]:
    """The slots in ``(after, until]`` that ``exclude_holidays`` leaves out, each with the
    holiday's name, at most ``limit`` of them: what a preview says it skips.

    One question under the timing's budget, all its candidates together (not per slot): a
    rule whose slots fall on holidays by the hundred thousand (every ten seconds of the first
    eight days of January) walked every one of them, seconds per preview (security review
    8). Where the budget ends, so does the list: the skips found until then."""
    calendar = timing.holidays
    if calendar is None:
        return []
    plain = dataclasses.replace(timing, holidays=None)
    meter = plain.budget.meter(after, stop_at=_earlier(until, plain.ends_at), per_slot=False)
    skipped: list[tuple[datetime, str]] = []
    try:
        for slot, _, _ in _annotated(plain, after, meter):
            if slot > until or (limit is not None and len(skipped) >= limit):
                break
            name = calendar.name_on(slot.astimezone(timing.zone).date())
            if name is not None:
                skipped.append((slot, name))
    except SearchExhausted:
        pass
    return skipped


def _windowed(
    timing: Timing, windows: ActiveWindows, after: datetime, meter: Meter
) -> Iterator[Resolved]:
    # A slot from the closed period that contains ``after`` is deferred past ``after``:
    # start the rule from where that period began.
    start = after
    wall = after.astimezone(timing.zone).replace(tzinfo=None)
    if not windows.contains(wall):
        try:
            since = windows.closed_since(wall).replace(tzinfo=timing.zone).astimezone(UTC)
        except OverflowError:  # a closed period that began before year 1: start at ``after``
            since = after + TICK
        start = min(after, since - TICK)
        if timing.starts_at is not None:
            start = max(start, timing.starts_at - TICK)
    items = apply_windows(
        _raw(timing, start, meter),
        windows,
        timing.zone,
        restart=lambda instant: _raw(timing, instant, meter),
        exhausted=partial(meter.exhaust, "window", detail=_NEVER_MET) if meter.strict else None,
    )
    for item in items:
        if item[0] > after:
            yield item


_NEVER_MET = f"the rule's times fell outside the skip window on {MAX_CLOSED:,} openings in a row"


def _raw(timing: Timing, after: datetime, meter: Meter) -> Iterator[Resolved]:
    """The rule's own items after ``after``, each charged to ``meter`` as a candidate."""
    return meter.candidates(rule_items(timing, after, meter))
