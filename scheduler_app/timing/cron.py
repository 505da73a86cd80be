"""Five-field cron expressions (Vixie dialect), parsed once and walked in local wall time."""

from __future__ import annotations

import calendar
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from scheduler_app.errors import InvalidRule
from scheduler_app.timing.gaps import times_gap

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
MONTH_NAMES = {name.upper(): i for i, name in enumerate(calendar.month_abbr) if name}
DAY_NAMES = {"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}
MAX_EXPRESSION_LENGTH = 1000


@dataclass(frozen=True)
class _FieldSpec:
    name: str
    low: int
    high: int
    names: dict[str, int]
    example: str


FIELDS = (
    _FieldSpec("minute", 0, 59, {}, "0-59, e.g. '*/15' or '0,30'"),
    _FieldSpec("hour", 0, 23, {}, "0-23, e.g. '9' or '8-18'"),
    _FieldSpec("day_of_month", 1, 31, {}, "1-31, e.g. '1' or '1,15'"),
    _FieldSpec("month", 1, 12, MONTH_NAMES, "1-12 or JAN-DEC, e.g. '1-6' or 'JAN,JUL'"),
    _FieldSpec(
        "day_of_week", 0, 7, DAY_NAMES, "0-7 (0 and 7 are Sunday) or SUN-SAT, e.g. 'MON-FRI'"
    ),
)


@dataclass(frozen=True)
class CronExpr:
    """A parsed cron expression; each field is the sorted tuple of the values it allows."""

    source: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: tuple[int, ...]
    months: tuple[int, ...]
    weekdays: tuple[int, ...]  # 0 = Sunday .. 6 = Saturday
    dom_star: bool
    dow_star: bool
    minute_star: bool
    hour_star: bool
    day_set: frozenset[int]
    weekday_set: frozenset[int]

    @property
    def fields(self) -> list[str]:
        return self.normalized.split()

    @property
    def normalized(self) -> str:
        return MACROS.get(self.source.strip().lower(), self.source.strip())

    @property
    def min_gap(self) -> int:
        """Smallest wall-clock seconds between two slots (days are assumed to follow each other)."""
        times = [hour * 3600 + minute * 60 for hour in self.hours for minute in self.minutes]
        return times_gap(times, 86400) or 86400

    @property
    def fixed_time(self) -> bool:
        """True when neither the minute nor the hour field starts with ``*``."""
        return not (self.minute_star or self.hour_star)

    def day_matches(self, day: date) -> bool:
        dom_ok = day.day in self.day_set
        dow_ok = (day.isoweekday() % 7) in self.weekday_set
        if self.dom_star or self.dow_star:
            return dom_ok and dow_ok
        return dom_ok or dow_ok

    def iter_local(self, start: datetime) -> Iterator[datetime]:
        """Every matching naive wall time at or after ``start``, in order, up to year 9999."""
        if start.second or start.microsecond:
            start = start.replace(second=0, microsecond=0) + timedelta(minutes=1)
        day = start.date()
        first_day = True
        while True:
            found = self._next_day(day)
            if found is None:
                return
            if found != day:
                first_day = False
            day = found
            yield from self._times_of_day(day, start if first_day else None)
            first_day = False
            if day == date.max:
                return
            day += timedelta(days=1)

    def _times_of_day(self, day: date, start: datetime | None) -> Iterator[datetime]:
        hours = self.hours
        if start is not None:
            hours = hours[bisect_left(hours, start.hour) :]
        y, mo, d = day.year, day.month, day.day
        for hour in hours:
            minutes = self.minutes
            if start is not None and hour == start.hour:
                minutes = minutes[bisect_left(minutes, start.minute) :]
            for minute in minutes:
                yield datetime(y, mo, d, hour, minute)  # noqa: DTZ001 - local wall time

    def _next_day(self, day: date) -> date | None:
        """The first matching day at or after ``day``."""
        while day.year <= 9999:
            if day.month not in self.months:
                nxt = self._next_month_start(day)
                if nxt is None:
                    return None
                day = nxt
                continue
            if self.day_matches(day):
                return day
            skipped = self._skip_day(day)
            if skipped is None:
                return None
            day = skipped
        return None

    def _skip_day(self, day: date) -> date | None:
        # When only the day-of-month restricts, jump straight to the next listed day.
        if self.dow_star and not self.dom_star:
            last = calendar.monthrange(day.year, day.month)[1]
            for candidate in self.days[bisect_left(self.days, day.day + 1) :]:
                if candidate <= last:
                    return day.replace(day=candidate)
                break
            return self._next_month_start(day)
        if day == date.max:
            return None
        return day + timedelta(days=1)

    def _next_month_start(self, day: date) -> date | None:
        index = bisect_left(self.months, day.month + 1)
        if index < len(self.months):
            return date(day.year, self.months[index], 1)
        if day.year >= 9999:
            return None
        return date(day.year + 1, self.months[0], 1)


def parse_cron(expression: str) -> CronExpr:
    """Parse a five-field cron expression or macro; ``InvalidRule`` says what to fix."""
    if not isinstance(expression, str):
        raise InvalidRule("cron", f"expected a string, got {type(expression).__name__}")
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise InvalidRule("cron", f"expression is longer than {MAX_EXPRESSION_LENGTH} characters")
    text = expression.strip()
    if not text.isprintable():
        raise InvalidRule("cron", "expression contains control characters; use plain text")
    if text.startswith("@"):
        if text.lower() not in MACROS:
            known = ", ".join(MACROS)
            raise InvalidRule("cron", f"unknown macro {text!r}; use one of: {known}")
        text = MACROS[text.lower()]
    parts = text.split()
    if len(parts) != 5:
        raise InvalidRule(
            "cron",
            f"expected 5 fields (minute hour day-of-month month day-of-week), got {len(parts)} "
            f"in {expression!r}; e.g. '30 9 * * MON-FRI'",
            code="field_count",
        )
    values = [_parse_field(part, spec) for part, spec in zip(parts, FIELDS, strict=True)]
    weekdays = tuple(sorted({v % 7 for v in values[4]}))
    expr = CronExpr(
        source=expression.strip(),
        minutes=tuple(sorted(values[0])),
        hours=tuple(sorted(values[1])),
        days=tuple(sorted(values[2])),
        months=tuple(sorted(values[3])),
        weekdays=weekdays,
        minute_star=parts[0].startswith("*"),
        hour_star=parts[1].startswith("*"),
        dom_star=parts[2].startswith("*"),
        dow_star=parts[4].startswith("*"),
        day_set=frozenset(values[2]),
        weekday_set=frozenset(weekdays),
    )
    _check_reachable(expr, expression)
    return expr


def _parse_field(text: str, spec: _FieldSpec) -> set[int]:
    field = f"cron.{spec.name}"
    result: set[int] = set()
    for item in text.split(","):
        if not item:
            raise InvalidRule(field, f"empty list item in {text!r}; allowed: {spec.example}")
        result.update(_parse_item(item, spec, field))
    return result


def _parse_item(item: str, spec: _FieldSpec, field: str) -> range:
    base, _, step_text = item.partition("/")
    step = 1
    if step_text or item.endswith("/"):
        step = _parse_number(step_text, spec, field, what="step", low=1, high=spec.high)
    if base == "*":
        low, high = spec.low, spec.high
    elif "-" in base:
        low_text, _, high_text = base.partition("-")
        low = _parse_value(low_text, spec, field)
        high = _parse_value(high_text, spec, field)
        if high == 0 < low and spec.name == "day_of_week" and high_text.upper() == "SUN":
            high = 7  # MON-SUN, FRI-SUN: Sunday by name ends a range as 7 (croniter's reading)
        if low > high:
            raise InvalidRule(
                field,
                f"range {base!r} runs backwards; write the smaller value first "
                f"(allowed: {spec.example})",
                code="range",
            )
    else:
        low = _parse_value(base, spec, field)
        high = spec.high if step_text else low
    return range(low, high + 1, step)


def _parse_value(text: str, spec: _FieldSpec, field: str) -> int:
    named = spec.names.get(text.upper())
    if named is not None:
        return named
    return _parse_number(text, spec, field, what="value", low=spec.low, high=spec.high)


def _parse_number(
    text: str, spec: _FieldSpec, field: str, *, what: str, low: int, high: int
) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > 4:
        raise InvalidRule(
            field, f"{what} {text!r} is not a number or name; allowed: {spec.example}", code="value"
        )
    number = int(text)
    if not low <= number <= high:
        raise InvalidRule(
            field,
            f"{what} {number} is out of range {low}-{high}; allowed: {spec.example}",
            code="range",
        )
    return number


def _check_reachable(expr: CronExpr, expression: str) -> None:
    """Refuse day/month combinations that never happen (e.g. '0 0 30 2 *')."""
    if not expr.dom_star and expr.dow_star:
        longest = max(_longest_month(month) for month in expr.months)
        if min(expr.days) > longest:
            raise InvalidRule(
                "cron.day_of_month",
                f"{expression!r} never fires: no listed month has day {min(expr.days)}",
                code="never",
            )


def _longest_month(month: int) -> int:
    return 29 if month == 2 else calendar.monthrange(2001, month)[1]
