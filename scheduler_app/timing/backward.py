"""The backward questions of the slot engine: the previous slot, and validation's first slot
(which also asks for the slot before it).

Every walk is the engine's own (``engine._annotated``, forward, under a meter): a backward
question walks forward over spans that double from an hour back, then halves the span that
holds its answer (``_last_slot``), all under one meter of the timing's budget.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from scheduler_app.errors import ScheduleValidationError
from scheduler_app.timing.budget import Meter, SearchBudget
from scheduler_app.timing.engine import _annotated, next_after, up_to
from scheduler_app.timing.rules import (
    EARLIEST,
    LATEST,
    IntervalRule,
    Kind,
    OnceRule,
    RRuleRule,
    Timing,
)
from scheduler_app.timing.walks import DST_REACH
from scheduler_app.timing.zones import TICK, ensure_aware

_EARLIEST = EARLIEST
_FIRST_SEARCH = timedelta(hours=1)
FOLLOWING_CHECKED = 2
"""Slots after the first that ``first_slot`` also finds, so validation sees the searches the
beat makes when those slots come (a rule that meets its window once passes the first)."""


def first_slot(
    timing: Timing,
    instant: datetime,
    *,
    horizon: timedelta | None = None,
    budget: int | None = None,
) -> datetime | None:
    """``next_after`` asked as validation asks it: "does it fire, and can the beat find its
    slots?". Finds the first slot, the slot before it (the window start of a schedule's first
    occurrence) and the ``FOLLOWING_CHECKED`` slots after it, each within the timing's search
    budget, and raises ``SearchExhausted`` (a validation error on ``rule``) when one search
    gives up; the engine's "the rule has ended" guesses (a skip window never met again, a
    solar event gone for years) raise for the first slot instead of answering None.
    ``horizon`` and ``budget`` (candidates) narrow the budget for this call."""
    instant = ensure_aware(instant, "instant")
    if horizon is not None or budget is not None:
        search = timing.budget
        timing = dataclasses.replace(
            timing,
            budget=SearchBudget(
                candidates=search.candidates if budget is None else budget,
                span=search.span if horizon is None else min(search.span, horizon),
                seconds=search.seconds,
            ),
        )
    meter = timing.budget.meter(instant, stop_at=timing.ends_at, strict=True)
    first = next(_annotated(timing, instant, meter), None)
    if first is None:
        return None
    slot = first[0]
    if horizon is not None and slot - instant > horizon:  # the one candidate the span allows
        meter.exhaust("span")
    if timing.kind is not Kind.ONCE:
        previous_slot(timing, slot, inclusive=False)
        later = slot
        for _ in range(FOLLOWING_CHECKED):
            following = next_after(timing, later)
            if following is None:
                break
            later = following
    return slot


def first_slot_from(timing: Timing, now: datetime, *, required: bool = True) -> datetime | None:
    """``first_slot`` at or after ``now``: where a new or redefined schedule starts. A rule
    with no such slot is refused on ``rule`` (``no_future_slot``) when a slot is ``required``
    (a new schedule must run; an edit may end one, and is answered None)."""
    first = first_slot(timing, now - TICK)
    if first is None and required:
        raise ScheduleValidationError(
            "rule",
            "the rule has no slot at or after now; pick a future time",
            code="no_future_slot",
        )
    return first


def previous_slot(timing: Timing, instant: datetime, *, inclusive: bool = True) -> datetime | None:
    """The last slot at (``inclusive``) or before ``instant``; None when there is none.

    Looks back over spans that double from an hour up to the budget's span, all the spans
    under one meter: ``SearchExhausted`` when the candidates or the span run out first."""
    instant = ensure_aware(instant, "instant")
    end = instant if inclusive else instant - TICK
    last = _search_ceiling(timing)
    if last is not None and end > last:
        end = last  # nothing later can be a slot; do not walk the years after it
    rule = timing.rule
    if (
        isinstance(rule, IntervalRule)
        and timing.window is None
        and timing.max_count is None
        and timing.holidays is None
    ):
        return _interval_at_or_before(rule, timing.starts_at, end)
    floor = _search_floor(timing)
    if end < floor:
        return None
    reach = timing.budget.span
    counted = (
        isinstance(rule, OnceRule)
        or timing.max_count is not None
        or (isinstance(rule, RRuleRule) and rule.spec.count is not None)
    )
    if counted:
        # One candidate, or a count walked from its origin by every search anyway: one pass
        # from the floor, however far back (the meter still bounds its candidates).
        reach = max(end - floor, _FIRST_SEARCH)
    meter = timing.budget.meter(end, stop_at=end, per_slot=False)
    span = _FIRST_SEARCH
    searched = end  # no slot in (searched, end]
    while True:
        span = min(span, reach)
        start = max(_back(end, span), floor)
        # A pass looks no further than where the last one began: its span never runs out
        # inside it (the one pass of a counted rule may start further back than the span;
        # its candidates count).
        meter.origin = max(start, _back(end, timing.budget.span))
        if counted:  # each walk of a counted rule starts at its origin: walk once, keep the last
            found = list(_slots_in(timing, start, searched, meter))
            if found:
                return found[-1]
        else:
            first = next(_slots_in(timing, start, searched, meter), None)
            if first is not None:
                return _last_slot(timing, first, searched, meter)
        if start <= floor or (timing.starts_at is not None and start < timing.starts_at):
            return None
        if span >= reach:
            meter.exhaust("span", before=end)
        searched = start
        span *= 2


def _slots_in(timing: Timing, after: datetime, until: datetime, meter: Meter) -> Iterator[datetime]:
    """The slots in ``(after, until]``; the walk stops at ``until``, charged to ``meter``."""
    meter.stop_at = until
    return up_to((slot for slot, _, _ in _annotated(timing, after, meter)), until)


def _last_slot(timing: Timing, slot: datetime, until: datetime, meter: Meter) -> datetime:
    """The last slot in ``[slot, until]`` (``slot`` is one), by halving the range: a dense rule
    whose last slot is months back (every minute of January to March, asked in October) costs
    a few short walks, not every slot of the months between."""
    while until - slot > _FIRST_SEARCH:
        middle = slot + (until - slot) / 2
        meter.origin = middle
        later = next(_slots_in(timing, middle, until, meter), None)
        if later is None:
            until = middle
        else:
            slot = later
    meter.origin = slot
    for later in _slots_in(timing, slot, until, meter):
        slot = later
    return slot


def _back(end: datetime, span: timedelta) -> datetime:
    """``end - span``, or ``_EARLIEST`` when that is before it (no OverflowError in year 1)."""
    return end - span if end - _EARLIEST > span else _EARLIEST


def _search_ceiling(timing: Timing) -> datetime | None:
    """An instant after which ``timing`` has no slot: ``ends_at``, or an RRULE's UNTIL (or its
    last RDATE, when later) plus the widest reach of a zone's offset; None: no such bound."""
    bounds = [] if timing.ends_at is None else [timing.ends_at]
    rule = timing.rule
    if isinstance(rule, RRuleRule) and rule.spec.until_local is not None:
        last_wall = max((rule.spec.until_local, *rule.spec.rdates[-1:]))
        if LATEST - last_wall.replace(tzinfo=UTC) > DST_REACH:  # else no bound worth having
            bounds.append(last_wall.replace(tzinfo=UTC) + DST_REACH)
    return min(bounds) if bounds else None


def _search_floor(timing: Timing) -> datetime:
    """An instant before which ``timing`` has no slot (searches look strictly after it)."""
    floor = _rule_floor(timing)
    start = timing.origin if timing.max_count is not None else timing.starts_at
    if start is not None and start - TICK > floor:
        return start - TICK
    return floor


def _rule_floor(timing: Timing) -> datetime:
    """An instant before which ``timing`` has no slot: an RRULE's first wall time (its DTSTART,
    or an earlier RDATE) or a one-time rule's wall time, less the widest reach of a zone's
    offset; an interval's anchor or a one-time instant; else ``_EARLIEST``. Without it the
    backward search of a rule whose first slot is its DTSTART walks back to year 1 (a new
    schedule's first occurrence asks for the slot before it)."""
    rule = timing.rule
    if isinstance(rule, IntervalRule):  # the searches look strictly after the floor
        return max(rule.anchor - TICK, _EARLIEST)
    if isinstance(rule, OnceRule) and rule.at.tzinfo is not None:
        return max(rule.at - TICK, _EARLIEST)
    if isinstance(rule, OnceRule):
        first = rule.at.replace(tzinfo=UTC)
    elif isinstance(rule, RRuleRule):
        first = min((rule.spec.anchor, *rule.spec.rdates[:1])).replace(tzinfo=UTC)
    else:
        return _EARLIEST
    try:
        return max(first - DST_REACH, _EARLIEST)
    except OverflowError:  # a DTSTART in the first days of year 1
        return _EARLIEST


def _interval_at_or_before(
    rule: IntervalRule, starts_at: datetime | None, end: datetime
) -> datetime | None:
    """The last grid point ``anchor + k * every`` (k >= 0) at or before ``end``, by arithmetic.

    The same answer as the search in ``previous_slot`` (the grid starts at the anchor, stops at
    ``LATEST`` and has no slot before ``starts_at``) without walking spans of slots.
    """
    end = min(end, LATEST)
    if end < rule.anchor:
        return None
    slot = rule.anchor + rule.every * ((end - rule.anchor) // rule.every)
    if slot <= _EARLIEST or (starts_at is not None and slot < starts_at):
        return None
    return slot
