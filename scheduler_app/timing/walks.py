"""The candidate times of a rule, before active windows, holidays and bounds filter them.

Calendar rules are walked in local wall time; each wall time maps to zero, one or two
instants under the DST policy (``zones.resolve_local``). DST can reorder those instants
(a shifted 02:30 lands after a real 03:00; the second copies of a repeated hour come after
all first copies), so ``merge_locals`` keeps a tiny heap and releases an instant only once
no later wall time can produce an earlier one.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from scheduler_app.errors import InvalidRule
from scheduler_app.timing.budget import Meter
from scheduler_app.timing.calendars.solar import SolarRule, solar_items
from scheduler_app.timing.rules import (
    EARLIEST,
    LATEST,
    CronRule,
    IntervalRule,
    OnceRule,
    RRuleRule,
    Timing,
)
from scheduler_app.timing.zones import DstPolicy, Resolved, offset_span, resolve_local

DST_REACH = timedelta(hours=26)
"""Far enough to cover the largest jump on record (Pacific/Apia skipped a whole day in 2011)."""


def rule_items(timing: Timing, after: datetime, meter: Meter) -> Iterator[Resolved]:
    """The rule's own ``(slot, wall time, DST note)`` items strictly after ``after``, before
    windows, holidays and bounds; a solar rule charges its days without the event to
    ``meter`` (the engine charges the items it receives)."""
    rule = timing.rule
    if isinstance(rule, IntervalRule):
        return _interval(rule, timing.zone, after)
    if isinstance(rule, OnceRule):
        return _once(rule, timing.zone, timing.effective_dst, after)
    if isinstance(rule, SolarRule):
        return solar_items(
            rule, timing.zone, min(after, LATEST), strict=meter.strict, charge=meter.quiet
        )
    return _calendar(timing, after, meter)


def _calendar(timing: Timing, after: datetime, meter: Meter) -> Iterator[Resolved]:
    rule = timing.rule
    zone = timing.zone
    if after >= LATEST:  # nothing is computed past LATEST (the zone may not reach 9999-12-31)
        return
    after = max(after, EARLIEST)
    wall = after.astimezone(zone).replace(tzinfo=None)  # once: both conversions are slow
    reach = offset_span(after, zone, DST_REACH, wall) if after + DST_REACH < LATEST else DST_REACH
    start = wall - reach
    if isinstance(rule, CronRule):
        local_times: Iterable[datetime] = rule.expr.iter_local(start)
    elif isinstance(rule, RRuleRule):
        zone_ = zone  # the budget counts instants: a wall time in the rule's zone

        def charge(wall: datetime) -> bool:
            return meter.quiet(wall.replace(tzinfo=zone_))

        local_times = rule.spec.iter_local(start, charge)
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
    if step * index > LATEST - rule.anchor:  # the next slot would be past LATEST
        return
    slot = rule.anchor + step * index
    while slot <= LATEST:
        yield slot, slot.astimezone(zone).replace(tzinfo=None), None
        if step > LATEST - slot:
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
