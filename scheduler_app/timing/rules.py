"""Timing specs: a rule of one kind, a zone, DST choices and bounds, as frozen values."""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from zoneinfo import ZoneInfo

from scheduler_app.errors import InvalidRule
from scheduler_app.timing.budget import SearchBudget
from scheduler_app.timing.calendars.public_holidays import HolidayCalendar, parse_holidays
from scheduler_app.timing.calendars.solar import SolarRule, parse_solar
from scheduler_app.timing.cron import CronExpr, parse_cron
from scheduler_app.timing.durations import parse_duration
from scheduler_app.timing.rrules import RRuleSpec, parse_rrule
from scheduler_app.timing.windows import ActiveWindows, parse_windows
from scheduler_app.timing.zones import (
    Ambiguous,
    DstPolicy,
    Nonexistent,
    ensure_aware,
    get_zone,
)


class Kind(enum.StrEnum):
    """The kinds of timing rule."""

    CRON = "cron"
    """Five-field cron expression, evaluated in local wall time."""
    RRULE = "rrule"
    """RFC 5545 recurrence rule anchored at DTSTART, evaluated in local wall time."""
    INTERVAL = "interval"
    """Every N seconds on a grid anchored at an instant (absolute time; DST does not apply)."""
    ONCE = "once"
    """One instant, or one local date-time in the zone."""
    SOLAR = "solar"
    """A solar event (sunrise, sunset, dawn, dusk, noon) at a latitude and longitude."""


@dataclass(frozen=True)
class CronRule:
    expr: CronExpr


@dataclass(frozen=True)
class RRuleRule:
    spec: RRuleSpec


@dataclass(frozen=True)
class IntervalRule:
    every: timedelta
    anchor: datetime  # aware, UTC


@dataclass(frozen=True)
class OnceRule:
    at: datetime  # aware UTC instant, or naive local wall time in the zone


Rule = CronRule | RRuleRule | IntervalRule | OnceRule | SolarRule


_KINDS: tuple[tuple[type, Kind], ...] = (
    (CronRule, Kind.CRON),
    (RRuleRule, Kind.RRULE),
    (IntervalRule, Kind.INTERVAL),
    (OnceRule, Kind.ONCE),
    (SolarRule, Kind.SOLAR),
)


@dataclass(frozen=True, kw_only=True)
class Timing:
    """Everything the time engine needs to produce the slots of one schedule."""

    rule: Rule
    zone: ZoneInfo
    dst: DstPolicy = dataclasses.field(default_factory=DstPolicy)
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    max_count: int | None = None
    window: ActiveWindows | None = None
    """Active windows: slots outside are deferred to the next opening or skipped."""
    holidays: HolidayCalendar | None = None
    """Slots whose local date is a public holiday there are left out."""
    budget: SearchBudget = dataclasses.field(default_factory=SearchBudget)
    """How much work one computation of a slot may do (``budget.py``); the beat's comes from
    ``SCHEDULER_SEARCH_CANDIDATES`` and ``SCHEDULER_SEARCH_SPAN_DAYS``."""

    def __hash__(self) -> int:
        return self._hash

    @cached_property
    def _hash(self) -> int:
        """The hash the dataclass would compute (its compared fields), computed once: the
        beat looks timings up per slot (the batch's shared walks, the slot before), and
        hashing the nested rule, zone and windows took 3 µs each time."""
        return hash(tuple(getattr(self, field.name) for field in _HASHED))

    def __getstate__(self) -> dict[str, object]:
        """Pickled without the remembered hash: another process hashes text differently."""
        return {name: value for name, value in self.__dict__.items() if name != "_hash"}

    @property
    def kind(self) -> Kind:
        for rule_type, kind in _KINDS:
            if isinstance(self.rule, rule_type):
                return kind
        raise TypeError(f"not a rule: {self.rule!r}")  # pragma: no cover - typed

    @cached_property
    def effective_dst(self) -> DstPolicy:
        """The DST policy with ``auto`` replaced by the rule kind's standard."""
        rule = self.rule
        if isinstance(rule, CronRule):
            if rule.expr.fixed_time:
                return self.dst.resolved(Nonexistent.NEXT_VALID, Ambiguous.FIRST)
            return self.dst.resolved(Nonexistent.SKIP, Ambiguous.BOTH)
        return self.dst.resolved(Nonexistent.SHIFT, Ambiguous.FIRST)

    @property
    def min_gap(self) -> int | None:
        """A lower bound on the seconds between two slots (wall clock for calendar rules);
        None when the rule has at most one slot."""
        rule = self.rule
        if isinstance(rule, CronRule):
            return rule.expr.min_gap
        if isinstance(rule, RRuleRule):
            return rule.spec.min_gap
        if isinstance(rule, IntervalRule):
            return int(rule.every.total_seconds())
        if isinstance(rule, SolarRule):
            return SOLAR_MIN_GAP
        return None

    @property
    def origin(self) -> datetime | None:
        """Where counting starts for ``max_count``."""
        if self.starts_at is not None:
            return self.starts_at
        if isinstance(self.rule, IntervalRule):
            return self.rule.anchor
        return None


_HASHED = tuple(
    field
    for field in dataclasses.fields(Timing)
    if (field.compare if field.hash is None else field.hash)
)
"""The fields a ``Timing``'s hash covers: those ``dataclass`` itself would hash."""


def build_timing(
    *,
    kind: str,
    rule: str | datetime | timedelta | int | float,
    timezone: str | ZoneInfo = "UTC",
    anchor: datetime | str | None = None,
    nonexistent: str | None = None,
    ambiguous: str | None = None,
    starts_at: datetime | None = None,
    ends_at: datetime | None = None,
    max_count: int | None = None,
    window: str | None = None,
    window_policy: str = "defer",
    exclude_holidays: str | None = None,
    budget: SearchBudget | None = None,
) -> Timing:
    """Validate raw inputs and build a ``Timing``; every problem is a ``ScheduleValidationError``.

    ``rule`` is a cron expression, an RRULE string, an interval (seconds, a ``timedelta`` or a
    duration such as ``"15m"``) or, for ``once``, a datetime (aware = an instant, naive = a
    local wall time in ``timezone``) or an ISO string. ``anchor`` is DTSTART for rrule and the
    grid origin for interval (aware; rrule also accepts a naive local wall time). For
    ``solar`` it is ``"EVENT LATITUDE LONGITUDE"`` (``calendars/solar.py``).
    ``exclude_holidays`` is ``CC`` or ``CC-SUBDIV`` (``calendars/public_holidays.py``).
    ``budget`` bounds every search for a slot (default: ``SearchBudget()``).
    """
    zone = get_zone(timezone)
    try:
        kind_value = Kind(str(kind).strip().lower())
    except ValueError:
        choices = ", ".join(k.value for k in Kind)
        raise InvalidRule("kind", f"unknown rule kind {kind!r}; use one of: {choices}") from None
    built = _build_rule(kind_value, rule, zone, _parse_datetime(anchor, "anchor"))
    timing = Timing(
        rule=built,
        zone=zone,
        dst=DstPolicy.parse(nonexistent, ambiguous),
        starts_at=_instant(starts_at, "starts_at", zone) if starts_at is not None else None,
        ends_at=_instant(ends_at, "ends_at", zone) if ends_at is not None else None,
        max_count=_check_max_count(max_count),
        window=parse_windows(window, window_policy) if window else None,
        holidays=parse_holidays(exclude_holidays),
        budget=budget or SearchBudget(),
    )
    _check_bounds(timing)
    return timing


def _build_rule(kind: Kind, rule: object, zone: ZoneInfo, anchor: datetime | None) -> Rule:
    if kind is Kind.CRON:
        if not isinstance(rule, str):
            raise InvalidRule(
                "cron", "a cron expression string is required, e.g. '0 9 * * MON-FRI'"
            )
        return CronRule(parse_cron(rule))
    if kind is Kind.RRULE:
        if not isinstance(rule, str):
            raise InvalidRule("rrule", "an RRULE string is required, e.g. 'FREQ=DAILY;BYHOUR=9'")
        return RRuleRule(parse_rrule(rule, anchor, zone))
    if kind is Kind.INTERVAL:
        every = parse_duration(rule, "every")  # type: ignore[arg-type]
        if anchor is None:
            raise InvalidRule("anchor", "an interval needs an anchor: the aware instant of slot 0")
        return IntervalRule(every=every, anchor=_instant(anchor, "anchor", zone))
    if kind is Kind.SOLAR:
        return parse_solar(rule)
    at = _parse_datetime(rule, "at")  # type: ignore[arg-type]
    if at is None:
        raise InvalidRule("at", "a one-time rule needs a datetime")
    if at.tzinfo is not None:
        return OnceRule(at=_instant(at, "at", zone))
    if not EARLIEST.replace(tzinfo=None) <= at <= LATEST.replace(tzinfo=None):
        raise InvalidRule("at", _RANGE_MESSAGE, code="range")
    return OnceRule(at=at.replace(microsecond=0))


SOLAR_MIN_GAP = 3600
"""A lower bound on the seconds between two solar slots: one a local day, each moving by
minutes a day, by hours near the polar circles (never by a whole day)."""
EARLIEST = datetime(1, 1, 3, tzinfo=UTC)
LATEST = datetime(9999, 12, 30, tzinfo=UTC)
_RANGE_MESSAGE = (
    "must lie between 0001-01-03 and 9999-12-30 (UTC), the range the scheduler computes in; "
    "e.g. 2026-03-29T09:00:00+02:00"
)


def _instant(value: datetime, field: str, zone: ZoneInfo) -> datetime:
    """An aware instant in UTC that the engine can also read as wall time in ``zone``."""
    try:
        instant = ensure_aware(value, field)
    except OverflowError:  # an offset that pushes it past year 1 or 9999
        raise InvalidRule(field, _RANGE_MESSAGE, code="range") from None
    if not EARLIEST <= instant <= LATEST:
        raise InvalidRule(field, _RANGE_MESSAGE, code="range")
    return instant


def _parse_datetime(value: datetime | str | None, field: str) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        raise InvalidRule(
            field, f"expected a datetime or ISO 8601 string, got {type(value).__name__}"
        )
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise InvalidRule(
            field, f"{value[:60]!r} is not an ISO 8601 date-time, e.g. 2026-03-29T02:30:00+02:00"
        ) from None


def _check_max_count(value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidRule("max_count", f"must be a whole number >= 1, got {value!r}")
    return value


def _check_bounds(timing: Timing) -> None:
    if timing.starts_at and timing.ends_at and timing.ends_at < timing.starts_at:
        raise InvalidRule("ends_at", "ends_at is before starts_at; swap them or drop one")
    if timing.max_count is not None and timing.origin is None:
        raise InvalidRule(
            "max_count", "max_count needs starts_at (the instant from which slots are counted)"
        )
