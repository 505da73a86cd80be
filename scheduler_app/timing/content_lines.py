"""RFC 5545 content lines around an RRULE: ``DTSTART[;TZID=..]``, ``RRULE``, ``EXDATE`` and
``RDATE`` (``[;TZID=..]``, comma lists, several lines), separated by newlines.

Every date-time becomes a wall time in the schedule's zone, where the rule is evaluated: a
``...Z`` value or one with another ``TZID`` is converted once, here. The slots they add
(RDATE) then pass the schedule's DST policy like the rule's own slots; EXDATE removes the
slot whose wall time it names. The lists are capped so a tick's cost stays bounded.
"""

from __future__ import annotations

import heapq
import re
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

from scheduler_app.errors import InvalidRule, UnknownTimezone
from scheduler_app.timing.zones import get_zone

MAX_DATES = 1000
"""At most this many RDATE values and this many EXDATE values in one rule."""
MAX_CONTENT_LENGTH = 40_000
NAMES = ("DTSTART", "RRULE", "EXDATE", "RDATE")
EXAMPLE = (
    "e.g. 'DTSTART;TZID=Europe/Riga:20270104T090000' / 'RRULE:FREQ=WEEKLY;BYDAY=MO' / "
    "'EXDATE;TZID=Europe/Riga:20271227T090000'"
)
_VALUE = re.compile(r"^(\d{8})(?:T(\d{6})(Z?))?$")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class ContentLines:
    """The parts of a multi-line rule; date-times are naive wall times in the zone."""

    rrule: str
    dtstart: datetime | None = None
    dtstart_zone: str | None = None
    rdates: tuple[datetime, ...] = ()
    exdates: frozenset[datetime] = frozenset()


def is_content_lines(text: str) -> bool:
    """Whether ``text`` is more than a bare RRULE: several lines or a named property."""
    body = text.strip()
    return "\n" in body or "\r" in body or body.upper().startswith(("DTSTART", "EXDATE", "RDATE"))


def dtstart_zone(text: str) -> str | None:
    """The TZID of the DTSTART line of ``text``, or None (no such line, or no TZID)."""
    if not isinstance(text, str) or not is_content_lines(text):
        return None
    for line in _lines(text):
        name, params, _ = _split(line)
        if name == "DTSTART":
            return params.get("TZID")
    return None


def parse_content_lines(text: str, zone: ZoneInfo) -> ContentLines:
    if len(text) > MAX_CONTENT_LENGTH:
        raise InvalidRule("rrule", f"the rule is longer than {MAX_CONTENT_LENGTH} characters")
    rrule: str | None = None
    dtstart: datetime | None = None
    start_zone: str | None = None
    rdates: list[datetime] = []
    exdates: list[datetime] = []
    for line in _lines(text):
        name, params, value = _split(line)
        if name == "RRULE":
            if rrule is not None:
                raise InvalidRule("rrule", "give one RRULE line; make a second schedule for more")
            rrule = value
        elif name == "DTSTART":
            if dtstart is not None:
                raise InvalidRule("rrule.DTSTART", "DTSTART is given twice; give it once")
            start_zone = params.get("TZID")
            dtstart = _dtstart(value, params, zone)
        else:
            target = rdates if name == "RDATE" else exdates
            target.extend(_values(name, value, params, zone))
            if len(target) > MAX_DATES:
                raise InvalidRule(
                    f"rrule.{name}",
                    f"more than {MAX_DATES} {name} values; split the schedule or use a rule",
                    code="too_long",
                )
    if rrule is None:
        raise InvalidRule(
            "rrule", f"an RRULE line is required with DTSTART, EXDATE and RDATE; {EXAMPLE}"
        )
    return ContentLines(
        rrule=rrule,
        dtstart=dtstart,
        dtstart_zone=start_zone,
        rdates=tuple(sorted(set(rdates))),
        exdates=frozenset(exdates),
    )


def _lines(text: str) -> list[str]:
    """Unfolded, non-empty lines (RFC 5545 3.1: a line starting with a space continues)."""
    lines: list[str] = []
    for raw in _LINE_BREAK.split(text.strip()):
        if raw[:1] in (" ", "\t") and lines:
            lines[-1] += raw[1:]
        elif raw.strip():
            lines.append(raw.strip())
    return lines


def _split(line: str) -> tuple[str, dict[str, str], str]:
    if not line.isprintable():
        raise InvalidRule("rrule", "a line contains control characters; use plain text")
    head, colon, value = line.partition(":")
    if not colon:
        shown = line[:40]
        raise InvalidRule("rrule", f"{shown!r} is not NAME:VALUE; {EXAMPLE}")
    name, *param_items = head.split(";")
    name = name.strip().upper()
    if name not in NAMES:
        raise InvalidRule(
            "rrule",
            f"unsupported line {name[:20]!r}; use DTSTART, RRULE, EXDATE or RDATE ({EXAMPLE})",
        )
    params: dict[str, str] = {}
    for item in param_items:
        key, equals, param = item.partition("=")
        key = key.strip().upper()
        if not equals or key not in ("TZID", "VALUE"):
            raise InvalidRule(
                f"rrule.{name}", f"unsupported parameter {item[:40]!r}; use TZID=Zone/Name"
            )
        params[key] = param.strip().strip('"')
    return name, params, value.strip()


def _zone_of(name: str, params: dict[str, str]) -> ZoneInfo | None:
    tzid = params.get("TZID")
    if tzid is None:
        return None
    try:
        return get_zone(tzid, f"rrule.{name}")
    except UnknownTimezone as error:
        raise InvalidRule(error.field, error.message) from None


def _check_value_type(name: str, params: dict[str, str]) -> None:
    kind = params.get("VALUE", "DATE-TIME").upper()
    if kind != "DATE-TIME":
        raise InvalidRule(
            f"rrule.{name}",
            f"VALUE={kind[:20]} is not supported; give date-times with the slot's time, "
            f"e.g. {name}:20271224T090000",
        )


def _dtstart(value: str, params: dict[str, str], zone: ZoneInfo) -> datetime:
    _check_value_type("DTSTART", params)
    tz = _zone_of("DTSTART", params)
    if tz is not None and tz.key != zone.key:
        raise InvalidRule(
            "rrule.DTSTART",
            f"DTSTART's TZID {tz.key} differs from the schedule's time zone {zone.key}; "
            f"set the time zone to {tz.key} (the rule is evaluated there) or drop the TZID",
            code="zone_mismatch",
        )
    return _wall(value, "DTSTART", tz, zone)


def _values(name: str, text: str, params: dict[str, str], zone: ZoneInfo) -> list[datetime]:
    _check_value_type(name, params)
    tz = _zone_of(name, params)
    return [_wall(item.strip(), name, tz, zone) for item in text.split(",") if item.strip()]


def _wall(value: str, name: str, tz: ZoneInfo | None, zone: ZoneInfo) -> datetime:
    """``value`` as a naive wall time in ``zone``."""
    match = _VALUE.match(value.upper())
    if match is None or match.group(2) is None:
        raise InvalidRule(
            f"rrule.{name}",
            f"{value[:40]!r} is not a date-time; write YYYYMMDDTHHMMSS, with Z for UTC, "
            f"e.g. 20271224T090000",
        )
    day, clock, utc = match.groups()
    try:
        wall = datetime.strptime(day + clock, "%Y%m%d%H%M%S")  # noqa: DTZ007 - wall time
    except ValueError:
        raise InvalidRule(f"rrule.{name}", f"{value!r} is not a real date and time") from None
    if utc and tz is not None:
        raise InvalidRule(f"rrule.{name}", f"{value!r} ends in Z (UTC): drop the TZID or the Z")
    source = UTC if utc else tz
    if source is None or source is zone or getattr(source, "key", None) == zone.key:
        return wall
    try:
        return wall.replace(tzinfo=source).astimezone(zone).replace(tzinfo=None)
    except OverflowError:
        raise InvalidRule(f"rrule.{name}", f"{value!r} is outside the years 1-9999") from None


def with_dates(
    rule_times: Iterator[datetime],
    start: datetime,
    rdates: tuple[datetime, ...],
    exdates: frozenset[datetime],
) -> Iterator[datetime]:
    """The rule's wall times at or after ``start`` plus the RDATEs, minus the EXDATEs, in order
    and without repeats. The RDATEs come from a bisection; an EXDATE check is a set lookup."""
    extra = iter(rdates[bisect_left(rdates, start) :])
    last: datetime | None = None
    for local in heapq.merge(rule_times, extra):
        if local == last or local in exdates:
            continue
        last = local
        yield local


GAP_REACH = timedelta(days=1)
_FIRST_WALL = datetime(1, 1, 1)  # noqa: DTZ001 - wall times: the calendar's ends
_LAST_WALL = datetime(9999, 12, 31, 23, 59, 59)  # noqa: DTZ001


def dates_gap(
    rule_gap: int | None,
    rdates: tuple[datetime, ...],
    rule_times: Callable[[datetime, datetime], Iterator[datetime]],
) -> int | None:
    """The smallest wall-clock gap once the RDATEs are added: between two RDATEs, or between an
    RDATE and a slot of the rule within a day of it (farther ones are never the smallest that
    matters: a minimum between slots is measured in minutes).

    Only an RDATE's nearest rule slot on either side can give its smallest gap, and only one
    closer than the smallest gap found so far changes the answer. So each RDATE looks no
    farther than that (the rule's own ``rule_gap`` at most, within which the rule has at
    most two slots): a few steps per RDATE, where walking a sub-daily rule over a whole day
    around each of 1,000 RDATEs took seconds."""
    found = [int((b - a).total_seconds()) for a, b in pairwise(rdates)]
    if rule_gap is not None:
        found.append(rule_gap)
    best = min(found) if found else None
    for rdate in rdates:
        reach = GAP_REACH if best is None else min(GAP_REACH, timedelta(seconds=best))
        gap = _nearest_slot(rdate, reach, rule_times)
        if gap is not None and (best is None or gap < best):
            best = gap
    return best


def _nearest_slot(
    rdate: datetime,
    reach: timedelta,
    rule_times: Callable[[datetime, datetime], Iterator[datetime]],
) -> int | None:
    """Seconds from ``rdate`` to the nearest rule slot other than itself within ``reach``
    (inclusive), or None when there is none. ``rule_times(start, end)`` walks the rule's
    slots from ``start`` and never looks past ``end``."""
    nearest: int | None = None
    start = rdate - reach if rdate - _FIRST_WALL > reach else _FIRST_WALL  # no OverflowError
    end = rdate + reach if _LAST_WALL - rdate > reach else _LAST_WALL  # in years 1 or 9999
    for local in rule_times(start, end):
        if local > end:
            break
        if local != rdate:
            gap = int(abs((local - rdate).total_seconds()))
            nearest = gap if nearest is None else min(nearest, gap)
        if local > rdate:
            break  # the first slot after the RDATE: later ones are farther
    return nearest
