"""RFC 5545 RRULEs: strict parsing with our own messages, evaluated by python-dateutil.

dateutil walks a rule from DTSTART, so the cost of ``after()`` grows with the anchor's age.
We make every default that DTSTART supplies explicit and then *re-anchor* the rule at the
start of an aligned period (a multiple of INTERVAL periods after the original one) just
before the time asked for: the occurrences are identical, the cost is flat.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, time, timedelta
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo

from dateutil import rrule as du

from scheduler_app.errors import InvalidRule
from scheduler_app.timing.checkpoints import COUNTED, Walk
from scheduler_app.timing.content_lines import (
    dates_gap,
    is_content_lines,
    parse_content_lines,
    with_dates,
)
from scheduler_app.timing.cron import CronExpr
from scheduler_app.timing.gaps import (
    DAY_PARTS,
    calendar_gap,
    never_reason,
    subdaily_pattern,
    times_per_period,
)
from scheduler_app.timing.rrule_days import cached_rule, matching_days
from scheduler_app.timing.rrule_text import (
    MAX_RULE_LENGTH,
    int_part,
    parse_freq,
    parse_options,
    parse_until,
    split_parts,
    wall_anchor,
)

MAX_SETPOS_TIMES = 1_000
_NEXT = timedelta(microseconds=1)
"""Times one period may hold when BYSETPOS picks among them: dateutil builds them all for
every period, about 0.5 µs each (an hour of every second, 3,600, cost 1.9 ms a slot)."""

Charge = Callable[[datetime], bool]
"""The search budget's charge for a wall time that may give no slot; False: stop."""


@dataclass(frozen=True)
class RRuleSpec:
    """A validated RRULE: ``options`` are dateutil keyword arguments (without dtstart)."""

    source: str
    freq: int
    interval: int
    count: int | None
    until_local: datetime | None
    options: tuple[tuple[str, Any], ...]
    anchor: datetime  # naive local wall time (DTSTART)
    walker: CronExpr | None = None
    """The same rule as a cron walker, for the simple rules where that is exact (fast path)."""
    until_instant: datetime | None = None
    """A UTC ``UNTIL`` (``...Z``): an inclusive bound on instants (RFC 5545), applied to the
    resolved slots. ``until_local`` is then only a loose wall-time bound that ends the walk."""
    min_gap: int | None = None
    """A lower bound on the wall-clock seconds between two slots (None: at most one slot)."""
    rdates: tuple[datetime, ...] = ()
    """RDATE wall times, sorted: slots added to the rule's (RFC 5545 content lines)."""
    exdates: frozenset[datetime] = frozenset()
    """EXDATE wall times: the rule's or RDATE's slots at these wall times are left out."""

    def iter_local(self, start: datetime, charge: Charge | None = None) -> Iterator[datetime]:
        """Every occurrence (naive wall time) at or after ``start``, in order. ``charge``
        (the search budget's) is called with each day the walk looks at that may give no
        slot; False ends the walk."""
        if self.rdates or self.exdates:
            return with_dates(self._rule_local(start, charge), start, self.rdates, self.exdates)
        return self._rule_local(start, charge)

    def _rule_local(self, start: datetime, charge: Charge | None = None) -> Iterator[datetime]:
        """The RRULE's own occurrences (without RDATE and EXDATE) at or after ``start``."""
        if self.walker is not None:
            first = max(start, self.anchor)
            if self.until_local is None:
                return self.walker.iter_local(first)  # no extra generator layer: hot path
            return self._walk(first, self.walker)
        if self.count is None and self.freq > du.DAILY and set(DAY_PARTS) & self.parts:
            return self._by_day(start, charge)
        if self.count is not None:
            return self._counted(start, charge)
        return _build(self, _realign(self, start)).xafter(start, inc=True)

    def _counted(self, start: datetime, charge: Charge | None = None) -> Iterator[datetime]:
        """A COUNT rule numbers its slots from DTSTART, so its walk starts there, or at the
        latest mark an earlier walk left before ``start`` (``checkpoints``): each slot before
        ``start`` is charged to the search budget (a DTSTART years back with a COUNT of a
        million walked up to a million slots, seconds of CPU, for free). The slots are the
        rule's without COUNT, walked as such a rule is (``_rule_local``: a sub-daily rule with
        day parts one matching day at a time, each day without a slot charged): dateutil's own
        walk from DTSTART stepped through every day between unpaid (a Feb 29 rule from year 1:
        10-31 s of CPU, security review 9)."""
        count = self.count or 0
        # The marks are the RRULE's own (its RDATE, EXDATE and text are not walked here): a key
        # of a few fields, not a spec holding 2,000 dates (review 10: memory).
        key = replace(self, rdates=(), exdates=frozenset(), source="")
        walk, since = Walk.resume(COUNTED, key, start, inclusive=False)
        first = self.anchor if since is None else since + _NEXT  # strictly after the mark
        for local in replace(self, count=None)._rule_local(first, charge):
            if walk.used == count:
                return
            walk.step(local)
            if local >= start:
                walk.reached(local)
                yield local
            elif charge is not None and not charge(local):
                return

    @property
    def parts(self) -> set[str]:
        return {name for name, _ in self.options}

    def _by_day(self, start: datetime, charge: Charge | None = None) -> Iterator[datetime]:
        """Sub-daily rules with day filters, one matching day at a time.

        dateutil walks every filtered day one by one (about a millisecond each), so a rule
        that fires on few days (Feb 29 on a Monday) took seconds to decades to answer. The
        matching days come from a yearly rule with the same day parts (one step per year);
        within a matching day the day parts filter nothing, so the rule without them gives
        the same slots, and its UNTIL at the day's end stops it at once.

        A matching day that gives no slot is charged to the search budget: an INTERVAL that
        meets the day parts once in centuries gives only such days (the budget's span then
        ends the walk after its years, not in the year 2601).
        """
        within_day = tuple((k, v) for k, v in self.options if k not in DAY_PARTS)
        start = max(start, self.anchor)
        last = None if self.until_local is None else self.until_local.date()
        for day in matching_days(self.options, start.date(), last):
            day_start = datetime.combine(day, time())
            if self.until_local is not None and day_start > self.until_local:
                return
            first = max(start, day_start)
            end = day_start.replace(hour=23, minute=59, second=59)  # no OverflowError in 9999
            until = end if self.until_local is None else min(end, self.until_local)
            rule = cached_rule(
                self.freq, self.interval, None, until, within_day, _realign(self, first)
            )
            gave = False
            for local in rule.xafter(first, inc=True):
                gave = True
                yield local
            if not gave and charge is not None and not charge(day_start):
                return

    def _walk(self, start: datetime, walker: CronExpr) -> Iterator[datetime]:
        until = self.until_local
        for local in walker.iter_local(start):
            if until is not None and local > until:
                return
            yield local


_WALKABLE_PARTS = {"wkst", "byweekday", "bymonthday", "bymonth", "byhour", "byminute", "bysecond"}


def _as_walker(
    freq: int, interval: int, count: int | None, options: dict[str, Any]
) -> CronExpr | None:
    """A cron walker equal to the rule, or None when the rule needs dateutil.

    Exact for INTERVAL=1 DAILY/WEEKLY/MONTHLY/YEARLY rules without COUNT, BYSETPOS, BYWEEKNO,
    BYYEARDAY, numbered weekdays or negative month days, at second 0: each period then
    contributes every matching day, and BYxxx parts intersect (cron's AND form).
    """
    if (
        count is not None
        or interval != 1
        or freq not in (du.YEARLY, du.MONTHLY, du.WEEKLY, du.DAILY)
    ):
        return None
    if set(options) - _WALKABLE_PARTS or tuple(options.get("bysecond", ())) != (0,):
        return None
    monthdays = options.get("bymonthday")
    weekdays = options.get("byweekday")
    if (monthdays and min(monthdays) < 1) or (weekdays and any(day.n for day in weekdays)):
        return None
    days = tuple(sorted(set(monthdays))) if monthdays else tuple(range(1, 32))
    cron_weekdays = (
        tuple(sorted({(day.weekday + 1) % 7 for day in weekdays})) if weekdays else tuple(range(7))
    )
    return CronExpr(
        source="rrule",
        minutes=tuple(sorted(set(options["byminute"]))),
        hours=tuple(sorted(set(options["byhour"]))),
        days=days,
        months=tuple(sorted(set(options.get("bymonth") or range(1, 13)))),
        weekdays=cron_weekdays,
        dom_star=not monthdays or bool(weekdays),  # RRULE parts intersect: cron's AND form
        dow_star=not weekdays,
        minute_star=False,
        hour_star=False,
        day_set=frozenset(days),
        weekday_set=frozenset(cron_weekdays),
    )


def parse_rrule(text: str, anchor: datetime | None, zone: ZoneInfo) -> RRuleSpec:
    """Parse ``text`` (with or without an ``RRULE:`` prefix) anchored at ``anchor``.

    ``anchor`` is DTSTART: an aware datetime (converted to the zone's wall time) or a naive
    wall time in ``zone``. ``text`` may also be RFC 5545 content lines (``content_lines.py``);
    their DTSTART line, when there is one, is the anchor.
    """
    if not isinstance(text, str):
        raise InvalidRule("rrule", f"expected a string, got {type(text).__name__}")
    lines = parse_content_lines(text, zone) if is_content_lines(text) else None
    if lines is not None:
        anchor = lines.dtstart or anchor
    if anchor is None:
        raise InvalidRule(
            "anchor", "an RRULE needs an anchor (DTSTART): an aware datetime or local time"
        )
    spec = _parse_body(lines.rrule if lines else text, anchor, zone)
    if lines is None or not (lines.rdates or lines.exdates):
        return replace(spec, source=text.strip())
    return replace(
        spec,
        source=text.strip(),
        rdates=lines.rdates,
        exdates=lines.exdates,
        # The gap check looks a day around each RDATE. A COUNT rule numbers its slots from
        # DTSTART, so its own walk would start there for every RDATE (a million slots each):
        # the rule without COUNT gives every slot it has there and maybe more, so the gap it
        # finds is never larger than the true one, and costs a few steps.
        min_gap=dates_gap(spec.min_gap, lines.rdates, partial(_bounded_walk, spec)),
    )


def _bounded_walk(spec: RRuleSpec, start: datetime, end: datetime) -> Iterator[datetime]:
    """The rule's slots (without COUNT) from ``start``, never looked for past ``end``: the gap
    check's walk around an RDATE. Without the bound a rule that gives no slot near it (a
    weekly grid on Mondays filtered to Tuesdays) was walked to the year 9999 for each RDATE,
    unpaid: 6-28 s of CPU per RDATE (security review 10)."""
    until = end if spec.until_local is None else min(end, spec.until_local)
    return replace(spec, count=None, until_local=until).iter_local(start)


def _parse_body(text: str, anchor: datetime, zone: ZoneInfo) -> RRuleSpec:
    if len(text) > MAX_RULE_LENGTH:
        raise InvalidRule("rrule", f"rule is longer than {MAX_RULE_LENGTH} characters")
    body = text.strip()
    if body.upper().startswith("RRULE:"):
        body = body[6:]
    if not body.isprintable():
        raise InvalidRule("rrule", "rule contains control characters; use plain text")
    parts = split_parts(body)
    local_anchor = wall_anchor(anchor, zone)
    freq = parse_freq(parts)
    interval = int_part(parts, "INTERVAL", 1, 1, 100_000) or 1
    count = int_part(parts, "COUNT", None, 1, 1_000_000)
    until, until_instant = parse_until(parts.get("UNTIL"), zone)
    if count is not None and until is not None:
        raise InvalidRule(
            "rrule.COUNT", "COUNT and UNTIL cannot both be set (RFC 5545); keep one of them"
        )
    options = parse_options(parts, freq, local_anchor)
    min_gap = _check_fires(freq, interval, options, local_anchor)
    spec = RRuleSpec(
        source=text.strip(),
        freq=freq,
        interval=interval,
        count=count,
        until_local=until,
        until_instant=until_instant,
        options=tuple(sorted(options.items())),
        anchor=local_anchor,
        walker=_as_walker(freq, interval, count, options),
        min_gap=min_gap if count != 1 else None,
    )
    _check_builds(spec)
    return spec


def _check_fires(freq: int, interval: int, options: dict[str, Any], anchor: datetime) -> int | None:
    """Refuse a rule that can never produce a slot; return its smallest gap (see gaps.py)."""
    reason = never_reason(freq, interval, options, anchor)
    times = times_per_period(freq, options)
    if "bysetpos" in options and times > MAX_SETPOS_TIMES:
        raise InvalidRule(
            "rrule.BYSETPOS",
            f"BYSETPOS picks among {times:,} times in each period of this rule; at most "
            f"{MAX_SETPOS_TIMES:,} are allowed (each period builds them all): narrow the "
            "BYxxx parts, or write the times you want without BYSETPOS",
        )
    gap: int | None = None
    if reason is None and freq in (du.HOURLY, du.MINUTELY, du.SECONDLY):
        gap, fires = subdaily_pattern(freq, interval, options, anchor)
        if not fires:
            reason = (
                "its BYHOUR/BYMINUTE/BYSECOND values are never on the INTERVAL grid that "
                f"starts at DTSTART ({anchor.time().isoformat()})"
            )
    elif reason is None:
        gap = calendar_gap(freq, interval, options)
    if reason is not None:
        raise InvalidRule(
            "rrule",
            f"this rule never produces a slot: {reason}; change the rule or its anchor",
            code="never",
        )
    return gap


def _build(spec: RRuleSpec, anchor: datetime) -> du.rrule:
    return cached_rule(spec.freq, spec.interval, spec.count, spec.until_local, spec.options, anchor)


def _check_builds(spec: RRuleSpec) -> None:
    try:
        _build(spec, spec.anchor)
    except (ValueError, TypeError) as exc:  # dateutil's own checks, with our field name
        raise InvalidRule("rrule", f"dateutil refused the rule: {exc}") from None


def _realign(spec: RRuleSpec, start: datetime) -> datetime:
    """The start of the latest aligned period that begins at or before ``start``."""
    anchor = spec.anchor
    if start <= anchor:
        return anchor
    step = spec.interval
    if spec.freq in (du.YEARLY, du.MONTHLY):
        unit = 12 if spec.freq == du.YEARLY else 1
        months = (start.year - anchor.year) * 12 + start.month - anchor.month
        periods = (months // unit) // step * step
        total = anchor.year * 12 + anchor.month - 1 + periods * unit
        return datetime(total // 12, total % 12 + 1, 1)  # noqa: DTZ001
    if spec.freq == du.WEEKLY:
        wkst = dict(spec.options).get("wkst", 0)
        # Day numbers, not dates: the week of a DTSTART in the first days of year 1 starts
        # before the first date there is.
        week_start = anchor.toordinal() - (anchor.weekday() - wkst) % 7
        weeks = (start.toordinal() - week_start) // 7 // step * step
        if weeks == 0:
            # dateutil's first WEEKLY period runs from DTSTART (not the week start) to the end
            # of that week, and BYSETPOS counts within it: keep the anchor for that week.
            return anchor
        return datetime.fromordinal(week_start + 7 * weeks)
    seconds = {du.DAILY: 86400, du.HOURLY: 3600, du.MINUTELY: 60, du.SECONDLY: 1}[spec.freq]
    base = _truncate(anchor, seconds)
    elapsed = int((start - base).total_seconds()) // seconds // step * step
    return base + timedelta(seconds=elapsed * seconds)


def _day_start(value: datetime) -> datetime:
    return value.replace(hour=0, minute=0, second=0, microsecond=0)


def _truncate(value: datetime, seconds: int) -> datetime:
    if seconds == 86400:
        return _day_start(value)
    if seconds == 3600:
        return value.replace(minute=0, second=0, microsecond=0)
    if seconds == 60:
        return value.replace(second=0, microsecond=0)
    return value.replace(microsecond=0)
