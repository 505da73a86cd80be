"""The slot engine: which instants a ``Timing`` fires at. Pure; callers pass every instant.

Calendar rules are walked in local wall time; each wall time maps to zero, one or two
instants under the DST policy (``zones.resolve_local``). DST can reorder those instants
(a shifted 02:30 lands after a real 03:00; the second copies of a repeated hour come after
all first copies), so ``merge_locals`` keeps a tiny heap and releases an instant only once
no later wall time can produce an earlier one.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

from scheduler_app.errors import InvalidRule
from scheduler_app.timing.calendars.public_holidays import HolidayCalendar
from scheduler_app.timing.calendars.solar import SolarRule, solar_items
from scheduler_app.timing.rules import CronRule, IntervalRule, OnceRule, RRuleRule, Timing
from scheduler_app.timing.windows import ActiveWindows, apply_windows
from scheduler_app.timing.zones import (
    DstPolicy,
    Resolved,
    ensure_aware,
    offset_span,
    resolve_local,
)

# Far enough to cover the largest jump on record (Pacific/Apia skipped a whole day in 2011).
_DST_REACH = timedelta(hours=26)
_TICK = timedelta(microseconds=1)
_EARLIEST = datetime(1, 1, 3, tzinfo=UTC)
_LATEST = datetime(9999, 12, 30, tzinfo=UTC)


SEARCH_HORIZON = timedelta(days=366 * 100)
"""How far ``first_slot`` looks for a slot before it calls the rule too sparse."""
SEARCH_BUDGET = 100_000
"""How many candidate times ``first_slot`` examines before it gives up."""


class SearchExhausted(InvalidRule):
    """``first_slot`` gave up: no slot within its horizon or candidate budget."""


@dataclass
class _Budget:
    until: datetime
    left: int

    def charge(self, items: Iterable[Resolved]) -> Iterator[Resolved]:
        for item in items:
            self.left -= 1
            if self.left < 0 or item[0] > self.until:
                self.exhaust()
            yield item

    def exhaust(self) -> None:
        """Give up: also called when an active-window search reaches its bound."""
        raise SearchExhausted(
            "rule",
            "no slot found within the next 100 years or the first "
            f"{SEARCH_BUDGET:,} candidate times (the active window or the bounds "
            "exclude nearly every time the rule produces); check the rule, the window "
            "and starts_at/ends_at",
            code="never_fires",
        )


def first_slot(
    timing: Timing,
    instant: datetime,
    *,
    horizon: timedelta = SEARCH_HORIZON,
    budget: int = SEARCH_BUDGET,
) -> datetime | None:
    """``next_after`` with a bounded search: the "does it ever fire" question asked when a
    schedule is validated. Raises ``SearchExhausted`` (a validation error on ``rule``) after
    ``budget`` candidate times or past ``instant + horizon``, instead of walking for seconds."""
    instant = ensure_aware(instant, "instant")
    until = _LATEST if _LATEST - instant < horizon else instant + horizon
    for slot, _, _ in iter_annotated(timing, instant, budget=_Budget(until, budget)):
        return slot
    return None


def next_after(timing: Timing, instant: datetime) -> datetime | None:
    """The first slot strictly after ``instant``, or None when the rule has no more."""
    for slot, _, _ in iter_annotated(timing, instant):
        return slot
    return None


def iter_slots(timing: Timing, after: datetime) -> Iterator[datetime]:
    """Every slot strictly after ``after``, in increasing order (possibly endless)."""
    return (slot for slot, _, _ in iter_annotated(timing, after))


def slots_between(
    timing: Timing, after: datetime, until: datetime, limit: int | None = None
) -> list[datetime]:
    """Slots ``s`` with ``after < s <= until``, oldest first, at most ``limit`` of them."""
    until = ensure_aware(until, "until")
    slots = iter_slots(timing, after)
    bounded = _until(slots, until)
    return list(islice(bounded, limit) if limit is not None else bounded)


def previous_slot(timing: Timing, instant: datetime, *, inclusive: bool = True) -> datetime | None:
    """The last slot at (``inclusive``) or before ``instant``; None when there is none."""
    instant = ensure_aware(instant, "instant")
    end = instant if inclusive else instant - _TICK
    if timing.ends_at is not None and end > timing.ends_at:
        end = timing.ends_at  # nothing later can be a slot; do not walk the years after it
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
    span = timedelta(hours=1)
    while True:
        start = max(end - span if end - _EARLIEST > span else _EARLIEST, floor)
        found = slots_between(timing, start, end)
        if found:
            return found[-1]
        if start <= floor or (timing.starts_at is not None and start < timing.starts_at):
            return None
        span *= 2


def _search_floor(timing: Timing) -> datetime:
    """An instant before which ``timing`` has no slot: an RRULE's first wall time (its DTSTART,
    or an earlier RDATE) less the widest reach of a zone's offset, else ``_EARLIEST``. Without
    it the backward search of a rule whose first slot is its DTSTART walks back to year 1 (a
    new schedule's first occurrence asks for the slot before it)."""
    rule = timing.rule
    if not isinstance(rule, RRuleRule):
        return _EARLIEST
    first = min((rule.spec.anchor, *rule.spec.rdates[:1])).replace(tzinfo=UTC)
    try:
        return max(first - _DST_REACH, _EARLIEST)
    except OverflowError:  # a DTSTART in the first days of year 1
        return _EARLIEST


def _interval_at_or_before(
    rule: IntervalRule, starts_at: datetime | None, end: datetime
) -> datetime | None:
    """The last grid point ``anchor + k * every`` (k >= 0) at or before ``end``, by arithmetic.

    The same answer as the search in ``previous_slot`` (the grid starts at the anchor, stops at
    ``_LATEST`` and has no slot before ``starts_at``) without walking spans of slots.
    """
    end = min(end, _LATEST)
    if end < rule.anchor:
        return None
    slot = rule.anchor + rule.every * ((end - rule.anchor) // rule.every)
    if slot <= _EARLIEST or (starts_at is not None and slot < starts_at):
        return None
    return slot


def iter_annotated(
    timing: Timing, after: datetime, *, budget: _Budget | None = None
) -> Iterator[Resolved]:
    """Like ``iter_slots`` but each item is ``(slot, local wall time, DST note or None)``."""
    after = ensure_aware(after, "after")
    if timing.starts_at is not None and timing.starts_at > after:
        after = timing.starts_at - _TICK
    items = (
        _counted(timing, after, budget)
        if timing.max_count is not None
        else _effective(timing, after, budget)
    )
    if timing.ends_at is None:
        return items
    ends_at = timing.ends_at
    return (item for item in _stop_after(items, ends_at))


def _stop_after(items: Iterable[Resolved], ends_at: datetime) -> Iterator[Resolved]:
    for item in items:
        if item[0] > ends_at:
            return
        yield item


def _until(slots: Iterable[datetime], until: datetime) -> Iterator[datetime]:
    for slot in slots:
        if slot > until:
            return
        yield slot


def _counted(timing: Timing, after: datetime, budget: _Budget | None) -> Iterator[Resolved]:
    origin = timing.origin
    if origin is None or timing.max_count is None:
        raise InvalidRule("max_count", "max_count needs starts_at to count slots from")
    remaining = timing.max_count
    for item in _effective(timing, min(after, origin - _TICK), budget):
        if remaining == 0:
            return
        remaining -= 1
        if item[0] > after:
            yield item


def _effective(timing: Timing, after: datetime, budget: _Budget | None) -> Iterator[Resolved]:
    """The rule's slots, passed through the active windows and the holidays, when the timing
    has some."""
    if timing.window is None:
        items = _raw(timing, after, budget)
    else:
        items = _windowed(timing, timing.window, after, budget)
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


def holiday_skips(timing: Timing, after: datetime, until: datetime) -> list[tuple[datetime, str]]:
    """The slots in ``(after, until]`` that ``exclude_holidays`` leaves out, each with the
    holiday's name: what a preview says it skips."""
    calendar = timing.holidays
    if calendar is None:
        return []
    plain = dataclasses.replace(timing, holidays=None)
    skipped = []
    for slot, _, _ in iter_annotated(plain, after):
        if slot > until:
            break
        name = calendar.name_on(slot.astimezone(timing.zone).date())
        if name is not None:
            skipped.append((slot, name))
    return skipped


def _windowed(
    timing: Timing, windows: ActiveWindows, after: datetime, budget: _Budget | None
) -> Iterator[Resolved]:
    # A slot from the closed period that contains ``after`` is deferred past ``after``:
    # start the rule from where that period began.
    start = after
    wall = after.astimezone(timing.zone).replace(tzinfo=None)
    if not windows.contains(wall):
        since = windows.closed_since(wall).replace(tzinfo=timing.zone).astimezone(UTC)
        start = min(after, since - _TICK)
        if timing.starts_at is not None:
            start = max(start, timing.starts_at - _TICK)
    items = apply_windows(
        _raw(timing, start, budget),
        windows,
        timing.zone,
        restart=lambda instant: _raw(timing, instant, budget),
        exhausted=budget.exhaust if budget is not None else None,
    )
    for item in items:
        if item[0] > after:
            yield item


def _raw(timing: Timing, after: datetime, budget: _Budget | None = None) -> Iterator[Resolved]:
    items = _rule_items(timing, after, strict=budget is not None)
    return items if budget is None else budget.charge(items)


def _rule_items(timing: Timing, after: datetime, *, strict: bool = False) -> Iterator[Resolved]:
    rule = timing.rule
    if isinstance(rule, IntervalRule):
        return _interval(rule, timing.zone, after)
    if isinstance(rule, OnceRule):
        return _once(rule, timing.zone, timing.effective_dst, after)
    if isinstance(rule, SolarRule):
        return solar_items(rule, timing.zone, min(after, _LATEST), strict=strict)
    return _calendar(timing, after)


def _calendar(timing: Timing, after: datetime) -> Iterator[Resolved]:
    rule = timing.rule
    zone = timing.zone
    if after >= _LATEST:  # nothing is computed past _LATEST (the zone may not reach 9999-12-31)
        return
    after = max(after, _EARLIEST)
    wall = after.astimezone(zone).replace(tzinfo=None)  # once: both conversions are slow
    reach = (
        offset_span(after, zone, _DST_REACH, wall) if after + _DST_REACH < _LATEST else _DST_REACH
    )
    start = wall - reach
    if isinstance(rule, CronRule):
        local_times: Iterable[datetime] = rule.expr.iter_local(start)
    elif isinstance(rule, RRuleRule):
        local_times = rule.spec.iter_local(start)
    else:  # pragma: no cover - _raw dispatches the other kinds
        raise InvalidRule("kind", f"not a calendar rule: {rule!r}")
    # A UTC UNTIL bounds instants (the merged items come in increasing instant order).
    until = rule.spec.until_instant if isinstance(rule, RRuleRule) else None
    try:
        for item in merge_locals(local_times, zone, timing.effective_dst):
            if until is not None and item[0] > until:
                if not rule.spec.rdates:  # type: ignore[union-attr]  # until: an RRuleRule
                    return
                if item[1] not in rule.spec.rdates:  # type: ignore[union-attr]
                    continue  # UNTIL bounds the RRULE's slots, not the RDATEs (RFC 5545)
            if item[0] > after:
                yield item
    except OverflowError:  # a wall time of 9999-12-31 is past the last UTC instant: the end
        return


def merge_locals(
    local_times: Iterable[datetime], zone: ZoneInfo, policy: DstPolicy
) -> Iterator[Resolved]:
    """Map increasing wall times to strictly increasing, de-duplicated instants."""
    heap: list[Resolved] = []
    last: datetime | None = None
    for local in local_times:
        resolved, bound = resolve_local(local, zone, policy)
        if not heap and len(resolved) == 1 and resolved[0][0] == bound:
            item = resolved[0]  # the common case: no DST nearby, nothing held back
            if last is None or item[0] > last:
                last = item[0]
                yield item
            continue
        for item in resolved:
            heapq.heappush(heap, item)
        while heap and heap[0][0] <= bound:
            item = heapq.heappop(heap)
            if last is None or item[0] > last:
                last = item[0]
                yield item
    while heap:
        item = heapq.heappop(heap)
        if last is None or item[0] > last:
            last = item[0]
            yield item


def _interval(rule: IntervalRule, zone: ZoneInfo, after: datetime) -> Iterator[Resolved]:
    step = rule.every
    index = 0 if after < rule.anchor else (after - rule.anchor) // step + 1
    if step * index > _LATEST - rule.anchor:  # the next slot would be past _LATEST
        return
    slot = rule.anchor + step * index
    while slot <= _LATEST:
        yield slot, slot.astimezone(zone).replace(tzinfo=None), None
        if step > _LATEST - slot:
            return
        slot += step


def _once(rule: OnceRule, zone: ZoneInfo, policy: DstPolicy, after: datetime) -> Iterator[Resolved]:
    candidates: list[Resolved]
    if rule.at.tzinfo is not None:
        candidates = [(rule.at, rule.at.astimezone(zone).replace(tzinfo=None), None)]
    else:
        candidates = list(merge_locals([rule.at], zone, policy))
    for item in candidates:
        if item[0] > after:
            yield item
