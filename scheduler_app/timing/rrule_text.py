"""The text of an RFC 5545 RRULE read strictly, part by part, with our own messages: FREQ,
INTERVAL, COUNT, UNTIL, the BYxxx parts (every default DTSTART supplies made explicit) and the
anchor as a wall time. ``rrules`` builds the rule from what this reads."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from dateutil import rrule as du

from scheduler_app.errors import InvalidRule

FREQS = {
    "YEARLY": du.YEARLY,
    "MONTHLY": du.MONTHLY,
    "WEEKLY": du.WEEKLY,
    "DAILY": du.DAILY,
    "HOURLY": du.HOURLY,
    "MINUTELY": du.MINUTELY,
    "SECONDLY": du.SECONDLY,
}
WEEKDAYS = {"MO": 0, "TU": 1, "WE": 2, "TH": 3, "FR": 4, "SA": 5, "SU": 6}
KNOWN = {
    "FREQ",
    "INTERVAL",
    "COUNT",
    "UNTIL",
    "WKST",
    "BYDAY",
    "BYMONTHDAY",
    "BYMONTH",
    "BYHOUR",
    "BYMINUTE",
    "BYSECOND",
    "BYSETPOS",
    "BYYEARDAY",
    "BYWEEKNO",
}
MAX_RULE_LENGTH = 2000
MAX_SETPOS = 31
"""Positions one BYSETPOS may list (the first and last few of a month's days, say)."""
_BYDAY_RE = re.compile(r"^([+-]?\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)$")
_UNTIL_RE = re.compile(r"^(\d{8})(T(\d{6})(Z?))?$")


def split_parts(body: str) -> dict[str, str]:
    parts: dict[str, str] = {}
    for item in body.split(";"):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        key = key.strip().upper()
        if not sep or not value.strip():
            raise InvalidRule("rrule", f"{item!r} is not NAME=VALUE; e.g. 'FREQ=DAILY;BYHOUR=9'")
        if key not in KNOWN:
            raise InvalidRule(
                f"rrule.{key[:40]}",
                f"unknown rule part {key[:40]!r}; supported: {', '.join(sorted(KNOWN))}",
            )
        if key in parts:
            raise InvalidRule(f"rrule.{key}", f"{key} is given twice; give it once")
        parts[key] = value.strip().upper()
    return parts


def parse_freq(parts: dict[str, str]) -> int:
    if "FREQ" not in parts:
        raise InvalidRule(
            "rrule.FREQ", "FREQ is required, e.g. 'FREQ=WEEKLY;BYDAY=MO'", code="required"
        )
    freq = FREQS.get(parts["FREQ"])
    if freq is None:
        raise InvalidRule(
            "rrule.FREQ", f"unknown FREQ {parts['FREQ']!r}; use one of: {', '.join(FREQS)}"
        )
    return freq


def int_part(
    parts: dict[str, str], key: str, default: int | None, low: int, high: int
) -> int | None:
    text = parts.get(key)
    if text is None:
        return default
    return _number(text, f"rrule.{key}", low, high)


def _number(text: str, field: str, low: int, high: int) -> int:
    body = text[1:] if text[:1] in "+-" else text
    if not body.isascii() or not body.isdigit() or len(body) > 7:
        raise InvalidRule(field, f"{text!r} is not a whole number")
    number = int(text)
    if not low <= number <= high or (number == 0 and low < 0):
        allowed = f"{low}..{high}, not 0" if low < 0 else f"{low}..{high}"
        raise InvalidRule(field, f"{number} is out of range ({allowed})", code="range")
    return number


def _numbers(parts: dict[str, str], key: str, low: int, high: int) -> tuple[int, ...] | None:
    text = parts.get(key)
    if text is None:
        return None
    # A set (RFC 5545): a value written twice selects nothing more, and each copy cost
    # dateutil a pass over the period (BYSETPOS=2 written 900 times: minutes per search).
    values = tuple(
        dict.fromkeys(_number(item, f"rrule.{key}", low, high) for item in text.split(","))
    )
    if key == "BYSETPOS" and len(values) > MAX_SETPOS:
        raise InvalidRule(
            "rrule.BYSETPOS",
            f"BYSETPOS lists {len(values)} positions; use at most {MAX_SETPOS} (each one costs "
            "a pass over every period), or a simpler rule",
        )
    return values


def _parse_byday(text: str) -> tuple[du.weekday, ...]:
    days: list[du.weekday] = []
    for item in text.split(","):
        match = _BYDAY_RE.match(item.strip())
        if not match:
            raise InvalidRule(
                "rrule.BYDAY", f"{item!r} is not a weekday; use MO..SU, optionally with 1MO or -1FR"
            )
        nth_text, name = match.groups()
        nth = _number(nth_text, "rrule.BYDAY", -53, 53) if nth_text else None
        days.append(du.weekday(WEEKDAYS[name], nth))
    return tuple(days)


def parse_options(parts: dict[str, str], freq: int, anchor: datetime) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if "WKST" in parts:
        if parts["WKST"] not in WEEKDAYS:
            raise InvalidRule("rrule.WKST", f"{parts['WKST']!r} is not a weekday; use MO..SU")
        options["wkst"] = WEEKDAYS[parts["WKST"]]
    if "BYDAY" in parts:
        options["byweekday"] = _parse_byday(parts["BYDAY"])
    for key, name, low, high in (
        ("BYMONTHDAY", "bymonthday", -31, 31),
        ("BYMONTH", "bymonth", 1, 12),
        ("BYHOUR", "byhour", 0, 23),
        ("BYMINUTE", "byminute", 0, 59),
        ("BYSECOND", "bysecond", 0, 59),
        ("BYSETPOS", "bysetpos", -366, 366),
        ("BYYEARDAY", "byyearday", -366, 366),
        ("BYWEEKNO", "byweekno", -53, 53),
    ):
        values = _numbers(parts, key, low, high)
        if values is not None:
            options[name] = values
    if "byweekno" in options and freq != du.YEARLY:
        raise InvalidRule(
            "rrule.BYWEEKNO", "BYWEEKNO is only allowed with FREQ=YEARLY (RFC 5545); use BYDAY"
        )
    if "byyearday" in options and freq in (du.DAILY, du.WEEKLY, du.MONTHLY):
        raise InvalidRule(
            "rrule.BYYEARDAY",
            "BYYEARDAY is not allowed with FREQ=DAILY, WEEKLY or MONTHLY (RFC 5545); "
            "use FREQ=YEARLY or BYMONTH with BYMONTHDAY",
        )
    if "bysetpos" in options and not (set(options) - {"bysetpos", "wkst"}):
        raise InvalidRule(
            "rrule.BYSETPOS", "BYSETPOS needs another BYxxx part to select from (RFC 5545)"
        )
    _explicit_defaults(options, freq, anchor)
    return options


def _explicit_defaults(options: dict[str, Any], freq: int, anchor: datetime) -> None:
    """Write down what dateutil would take from DTSTART, so the anchor can move."""
    day_parts = {"byweekno", "byyearday", "bymonthday", "byweekday"}
    if not day_parts & set(options):
        if freq == du.YEARLY:
            options.setdefault("bymonth", (anchor.month,))
            options["bymonthday"] = (anchor.day,)
        elif freq == du.MONTHLY:
            options["bymonthday"] = (anchor.day,)
        elif freq == du.WEEKLY:
            options["byweekday"] = (du.weekday(anchor.weekday()),)
    if freq < du.HOURLY:
        options.setdefault("byhour", (anchor.hour,))
    if freq < du.MINUTELY:
        options.setdefault("byminute", (anchor.minute,))
    if freq < du.SECONDLY:
        options.setdefault("bysecond", (anchor.second,))
    options.setdefault("wkst", 0)


_LATEST_WALL = datetime(9999, 12, 31, 23, 59, 59)  # noqa: DTZ001 - a naive wall time
UNTIL_SLACK = timedelta(hours=26)
"""How far past a UTC UNTIL's wall time the walk goes: more than any offset change on record
(Pacific/Apia skipped a day), so no slot before the instant is cut off by the wall-time bound."""


def parse_until(text: str | None, zone: ZoneInfo) -> tuple[datetime | None, datetime | None]:
    """(wall-time bound of the walk, UTC instant bound or None for a local UNTIL)."""
    if text is None:
        return None, None
    match = _UNTIL_RE.match(text)
    if not match:
        raise InvalidRule(
            "rrule.UNTIL", f"{text!r} is not a date or date-time; use 20271231 or 20271231T235959Z"
        )
    day, _, clock, utc_flag = match.groups()
    try:
        value = datetime.strptime(day + (clock or "235959"), "%Y%m%d%H%M%S")  # noqa: DTZ007
    except ValueError:
        raise InvalidRule("rrule.UNTIL", f"{text!r} is not a real date or time") from None
    if utc_flag:
        # An instant (RFC 5545: inclusive, compared with the slots' instants). The wall-time
        # bound only stops the walk; the engine compares each resolved slot with the instant.
        instant = value.replace(tzinfo=UTC)
        wall = _wall(instant, zone, "rrule.UNTIL", repr(text))
        latest = _LATEST_WALL
        bound = wall + UNTIL_SLACK if wall < latest - UNTIL_SLACK else latest
        return bound, instant
    return value, None


def wall_anchor(anchor: datetime, zone: ZoneInfo) -> datetime:
    if not isinstance(anchor, datetime):
        raise InvalidRule("rrule.anchor", "an anchor (DTSTART) datetime is required")
    if anchor.tzinfo is not None:
        anchor = _wall(anchor, zone, "anchor", anchor.isoformat())
    return anchor.replace(microsecond=0)


def _wall(instant: datetime, zone: ZoneInfo, field: str, shown: str) -> datetime:
    """``instant``'s wall time in ``zone`` (naive); refused on ``field``, naming it as
    ``shown``, when that falls outside the years datetime holds."""
    try:
        return instant.astimezone(zone).replace(tzinfo=None)
    except OverflowError:
        raise InvalidRule(field, f"{shown} is outside the years 1-9999 in this time zone") from None
