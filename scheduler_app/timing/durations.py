"""Durations such as ``90s``, ``15m``, ``6h``, ``1d``, ``1h30m`` or ISO 8601 ``PT15M``."""

from __future__ import annotations

import re
from datetime import timedelta

from scheduler_app.errors import InvalidRule

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_COMPACT = re.compile(r"^(?:(\d{1,9})\s*([smhdw]))+$")
_PART = re.compile(r"(\d{1,9})\s*([smhdw])")
_ISO = re.compile(
    r"^P(?:(\d{1,9})W)?(?:(\d{1,9})D)?(?:T(?:(\d{1,9})H)?(?:(\d{1,9})M)?(?:(\d{1,9})S)?)?$"
)
MAX_DURATION = timedelta(days=366 * 100)
EXAMPLES = "e.g. 90s, 15m, 6h, 1d, 1h30m, PT15M, or a number of seconds"


def parse_duration(value: str | int | float | timedelta, field: str = "duration") -> timedelta:
    """A positive whole-second duration; anything else raises ``InvalidRule`` naming ``field``."""
    if isinstance(value, bool):
        raise InvalidRule(field, f"expected a duration, got {value!r}; {EXAMPLES}")
    try:
        if isinstance(value, timedelta):
            result = value
        elif isinstance(value, int | float):
            if value != value or value in (float("inf"), float("-inf")):
                raise InvalidRule(field, f"{value!r} is not a number of seconds; {EXAMPLES}")
            result = timedelta(seconds=value)
        elif isinstance(value, str):
            result = _parse_text(value, field)
        else:
            raise InvalidRule(field, f"expected a duration, got {type(value).__name__}; {EXAMPLES}")
    except OverflowError:  # timedelta refuses more than 999,999,999 days
        raise InvalidRule(field, "must be at most 100 years", code="range") from None
    return _check(result, field)


def _parse_text(value: str, field: str) -> timedelta:
    text = value.strip().lower().replace(" ", "")
    if text.isascii() and text.isdigit() and len(text) <= 12:
        return timedelta(seconds=int(text))
    if _COMPACT.match(text):
        return timedelta(seconds=sum(int(n) * _UNITS[u] for n, u in _PART.findall(text)))
    # ISO 8601 ends with a unit: not "P", "PT" or "P1DT" (a "T" with nothing after it).
    iso = _ISO.match(text.upper()) if text.endswith(tuple(_UNITS)) else None
    if iso:
        weeks, days, hours, minutes, seconds = (int(g or 0) for g in iso.groups())
        return timedelta(weeks=weeks, days=days, hours=hours, minutes=minutes, seconds=seconds)
    raise InvalidRule(field, f"{value[:40]!r} is not a duration; {EXAMPLES}")


def _check(result: timedelta, field: str) -> timedelta:
    if result <= timedelta(0):
        raise InvalidRule(field, f"must be at least 1 second, got {result}", code="range")
    if result > MAX_DURATION:
        raise InvalidRule(field, "must be at most 100 years", code="range")
    if result.microseconds:
        raise InvalidRule(field, f"must be a whole number of seconds, got {result}", code="range")
    return result


def format_duration(value: timedelta) -> str:
    """``timedelta(seconds=5400)`` -> ``"1h30m"``."""
    seconds = int(value.total_seconds())
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"
