"""Zones, aware datetimes and the DST policies that map local wall times to instants."""

from __future__ import annotations

import enum
from bisect import bisect_right
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from difflib import get_close_matches
from functools import lru_cache
from typing import TypeAlias, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from scheduler_app.errors import NaiveDatetime, ScheduleValidationError, UnknownTimezone

ZERO = timedelta(0)
TICK = timedelta(microseconds=1)
"""One microsecond, a datetime's smallest step: ``after=instant - TICK`` keeps a slot at
``instant`` (every question of the engine asks for the slots after ``after``)."""


class Nonexistent(enum.StrEnum):
    """What to do with a local time that the clock skips (spring forward)."""

    AUTO = "auto"
    """Follow the rule's standard (see docs/timing.md)."""
    SKIP = "skip"
    """No slot for that local time."""
    SHIFT = "shift"
    """Read the time with the offset from before the gap: 02:30 becomes 03:30."""
    NEXT_VALID = "next_valid"
    """The first instant after the gap, i.e. the instant of the jump: 03:00."""


class Ambiguous(enum.StrEnum):
    """What to do with a local time that happens twice (fall back)."""

    AUTO = "auto"
    """Follow the rule's standard (see docs/timing.md)."""
    FIRST = "first"
    """The earlier of the two instants (the one with the summer offset)."""
    LAST = "last"
    """The later of the two instants."""
    BOTH = "both"
    """Both instants: two slots."""


@dataclass(frozen=True, kw_only=True)
class DstPolicy:
    """The pair of DST choices of one schedule; ``auto`` is resolved per rule kind."""

    nonexistent: Nonexistent = Nonexistent.AUTO
    ambiguous: Ambiguous = Ambiguous.AUTO

    @classmethod
    def parse(cls, nonexistent: str | None = None, ambiguous: str | None = None) -> DstPolicy:
        return cls(
            nonexistent=_parse_enum(Nonexistent, nonexistent, "dst.nonexistent"),
            ambiguous=_parse_enum(Ambiguous, ambiguous, "dst.ambiguous"),
        )

    def resolved(self, nonexistent: Nonexistent, ambiguous: Ambiguous) -> DstPolicy:
        """Replace each ``auto`` with the given default."""
        return DstPolicy(
            nonexistent=nonexistent if self.nonexistent is Nonexistent.AUTO else self.nonexistent,
            ambiguous=ambiguous if self.ambiguous is Ambiguous.AUTO else self.ambiguous,
        )


E = TypeVar("E", bound=enum.StrEnum)


def _parse_enum(kind: type[E], value: str | None, field: str) -> E:
    if value is None or value == "":
        return kind("auto")
    try:
        return kind(str(value).strip().lower())
    except ValueError:
        choices = ", ".join(member.value for member in kind)
        raise ScheduleValidationError(
            field, f"unknown value {value!r}; use one of: {choices}", code="invalid_choice"
        ) from None


MAX_ZONE_NAME = 100


@lru_cache(maxsize=1024)
def _load_zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def get_zone(name: str | ZoneInfo, field: str = "timezone") -> ZoneInfo:
    """The IANA zone ``name``, or ``UnknownTimezone`` naming the field and the fix (with the
    zone meant, for a wrongly cased or misspelt name: "did you mean 'Europe/Riga'?")."""
    if isinstance(name, ZoneInfo):
        return name
    if not isinstance(name, str) or not name.strip():
        raise UnknownTimezone(field, "a time zone name is required, e.g. 'Europe/Riga' or 'UTC'")
    cleaned = name.strip()
    try:
        if len(cleaned) > MAX_ZONE_NAME or not cleaned.isprintable():
            raise ValueError(cleaned)  # IANA names are short and printable; do not look it up
        return _load_cased(cleaned)
    except (ZoneInfoNotFoundError, ValueError, OSError, RecursionError):
        shown = cleaned if len(cleaned) <= 60 else cleaned[:60] + "..."
        raise UnknownTimezone(
            field, f"unknown time zone {shown!r}; {_fix_for(cleaned)}", code="unknown_timezone"
        ) from None


def _fix_for(name: str) -> str:
    meant = zone_meant(name)
    if meant is None:
        return (
            "use an IANA name such as 'Europe/Riga', 'America/New_York' or 'UTC' (not an "
            "abbreviation like 'EST' or an offset)"
        )
    cased = " (zone names are case-sensitive)" if meant.lower() == name.lower() else ""
    return f"did you mean {meant!r}?{cased}"


@lru_cache(maxsize=1024)
def _load_cased(name: str) -> ZoneInfo:
    """The zone, spelt as the IANA database spells it: on a case-insensitive file system
    ``ZoneInfo('europe/riga')`` loads, and its key would be stored as typed."""
    zone = _load_zone(name)
    if _by_lower().get(name.lower(), name) != name:
        raise ValueError(name)
    return zone


@lru_cache(maxsize=1)
def _by_lower() -> dict[str, str]:
    """Every zone name worth suggesting, by its lower-case spelling: area/location names
    and UTC (legacy names like ``EST`` or ``CET`` are refused as abbreviations)."""
    names = (name for name in sorted(available_timezones()) if "/" in name or name == "UTC")
    return {name.lower(): name for name in names}


def zone_meant(name: str) -> str | None:
    """The known zone a person most likely meant by ``name``: the same name cased differently
    (``europe/riga``), else the closest spelling (``Europe/Rgia``); None when nothing is close."""
    typed = name.strip().lower()
    if len(typed) > MAX_ZONE_NAME or not typed.isprintable():
        return None
    by_lower = _by_lower()
    if typed in by_lower:
        return by_lower[typed]
    close = get_close_matches(typed, list(by_lower), n=1, cutoff=0.8)
    return by_lower[close[0]] if close else None


def ensure_aware(value: datetime, field: str) -> datetime:
    """Return ``value`` in UTC; a naive datetime raises ``NaiveDatetime``."""
    if not isinstance(value, datetime):
        raise NaiveDatetime(field, f"expected a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise NaiveDatetime(
            field,
            f"{value.isoformat()} has no time zone; pass an aware datetime "
            "(e.g. with tzinfo=UTC or ZoneInfo('Europe/Riga')) or an ISO string with an offset",
            code="naive_datetime",
        )
    try:
        return value.astimezone(UTC)
    except OverflowError:  # 0001-01-01 at a positive offset, 9999-12-31 at a negative one
        raise ScheduleValidationError(
            field,
            f"{value.isoformat()} is out of range in UTC; use a date between years 1 and 9999",
            code="range",
        ) from None


# Notes attached to slots produced from a local time that a DST transition touches.
GAP_SHIFT = "gap_shift"
GAP_NEXT_VALID = "gap_next_valid"
FOLD_FIRST = "fold_first"
FOLD_LAST = "fold_last"

Resolved: TypeAlias = tuple[datetime, datetime, str | None]
"""(instant in UTC, the local wall time it came from, DST note or None)."""


def resolve_local(
    local: datetime, zone: ZoneInfo, policy: DstPolicy
) -> tuple[list[Resolved], datetime]:
    """Map a naive local wall time to its instants under ``policy`` (which must be resolved).

    Also returns a lower bound for every instant that a *later* local time can map to, so
    that callers can emit instants in order (see ``engine.merge_locals``).
    """
    if not near_transition(zone, local):
        # The common case, kept cheap: one offset, no fold to look at.
        off = zone.utcoffset(local) or ZERO
        instant = _as_utc(local) - off
        return [(instant, local, None)], instant
    off0 = zone.utcoffset(local) or ZERO
    off1 = zone.utcoffset(local.replace(fold=1)) or ZERO
    if off0 == off1:
        instant = _as_utc(local) - off0
        return [(instant, local, None)], instant
    if off0 > off1:
        return _resolve_fold(local, off0, off1, policy.ambiguous)
    return _resolve_gap(local, zone, off0, off1, policy.nonexistent)


def _as_utc(local: datetime) -> datetime:
    # The constructor is about twice as fast as ``replace(tzinfo=UTC)`` on CPython 3.11.
    return datetime(
        local.year,
        local.month,
        local.day,
        local.hour,
        local.minute,
        local.second,
        local.microsecond,
        tzinfo=UTC,
    )


_NEAR = timedelta(hours=52)  # 26 h of reach plus the largest jump on record (24 h)
_SAMPLE = timedelta(hours=6)


def near_transition(zone: ZoneInfo, local: datetime) -> bool:
    """True when a change of the zone's offset is within 52 hours of the wall time ``local``."""
    marks = _transition_marks(zone, local.year)
    if not marks:
        return False
    index = bisect_right(marks, local)
    if index < len(marks) and marks[index] - local <= _NEAR:
        return True
    return index > 0 and local - marks[index - 1] <= _NEAR


@lru_cache(maxsize=8192)
def _transition_marks(zone: ZoneInfo, year: int) -> tuple[datetime, ...]:
    """Wall times (naive) of the offset changes around ``year``, found by sampling.

    Sampling every 6 hours finds every change except two that cancel out within 6 hours,
    which no zone in the tz database has.
    """
    start = datetime(max(year, 2), 1, 1, tzinfo=UTC) - timedelta(days=3)
    end = datetime(min(year, 9998) + 1, 1, 1, tzinfo=UTC) + timedelta(days=3)
    marks: list[datetime] = []
    instant = start
    previous = instant.astimezone(zone).utcoffset()
    while instant < end:
        following = instant + _SAMPLE
        offset = following.astimezone(zone).utcoffset()
        if offset != previous:
            change = _first_with_offset(zone, instant, following, offset)
            marks.append((change + (previous or ZERO)).replace(tzinfo=None))
            previous = offset
        instant = following
    return tuple(marks)


def _first_with_offset(
    zone: ZoneInfo, low: datetime, high: datetime, offset: timedelta | None
) -> datetime:
    while high - low > timedelta(seconds=1):
        mid = (low + (high - low) / 2).replace(microsecond=0)
        if mid.astimezone(zone).utcoffset() == offset:
            high = mid
        else:
            low = mid
    return high


def _resolve_fold(
    local: datetime, off0: timedelta, off1: timedelta, choice: Ambiguous
) -> tuple[list[Resolved], datetime]:
    first = (local - off0).replace(tzinfo=UTC)
    last = (local - off1).replace(tzinfo=UTC)
    if choice is Ambiguous.LAST:
        return [(last, local, FOLD_LAST)], last
    if choice is Ambiguous.BOTH:
        return [(first, local, FOLD_FIRST), (last, local, FOLD_LAST)], first
    return [(first, local, FOLD_FIRST)], first


def _resolve_gap(
    local: datetime, zone: ZoneInfo, off0: timedelta, off1: timedelta, choice: Nonexistent
) -> tuple[list[Resolved], datetime]:
    jump = transition_instant(local, zone, off0, off1)
    if choice is Nonexistent.SHIFT:
        return [((local - off0).replace(tzinfo=UTC), local, GAP_SHIFT)], jump
    if choice is Nonexistent.NEXT_VALID:
        return [(jump, local, GAP_NEXT_VALID)], jump
    return [], jump


def transition_instant(
    local: datetime, zone: ZoneInfo, off_before: timedelta, off_after: timedelta
) -> datetime:
    """The UTC instant at which the clock jumps over the gap that contains ``local``."""
    # The jump lies in (local - off_after, local - off_before]; transitions are whole seconds.
    low = (local - off_after).replace(tzinfo=UTC)
    high = (local - off_before).replace(tzinfo=UTC)
    while high - low > timedelta(seconds=1):
        mid = low + (high - low) // 2
        mid = mid.replace(microsecond=0)
        if mid.astimezone(zone).utcoffset() == off_after:
            high = mid
        else:
            low = mid
    return high


def offset_span(
    instant: datetime, zone: ZoneInfo, reach: timedelta, local: datetime | None = None
) -> timedelta:
    """How far the zone's offset moves within ``reach`` of ``instant`` (0 away from DST).

    ``local`` is ``instant``'s naive wall time in ``zone`` when the caller has it already.
    """
    if local is None:
        local = instant.astimezone(zone).replace(tzinfo=None)
    if not near_transition(zone, local):
        return ZERO
    here = instant.astimezone(zone).utcoffset() or ZERO
    spans = (
        abs(((instant + delta).astimezone(zone).utcoffset() or ZERO) - here)
        for delta in (-reach, reach)
    )
    return max(spans)
