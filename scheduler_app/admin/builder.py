"""The schedule builder: plain choices (every N minutes, daily at times, weekly, monthly, once)
to the stored rule (cron or RRULE) and back. Pure: no Django, no clock.

``to_rule`` writes what the engine already understands; ``from_rule`` reads a stored rule back
into the builder when the builder can express it (else ``None``: the page opens in the
"advanced" mode showing the raw rule).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

REPEATS = (
    ("minutes", "Every N minutes"),
    ("hours", "Every N hours"),
    ("daily", "Daily at times"),
    ("weekly", "Weekly on weekdays at times"),
    ("monthly", "Monthly at times"),
    ("once", "Once, at a local date and time"),
    ("advanced", "Advanced: raw cron / RRULE / interval / instant"),
)
WEEKDAYS = (
    ("MO", "Mon"),
    ("TU", "Tue"),
    ("WE", "Wed"),
    ("TH", "Thu"),
    ("FR", "Fri"),
    ("SA", "Sat"),
    ("SU", "Sun"),
)
MONTHLY_ON = (("day", "on day"), ("last", "on the last day"), ("nth", "on the"))
NTHS = (("1", "first"), ("2", "second"), ("3", "third"), ("4", "fourth"), ("-1", "last"))
_CRON_DAY = {code: label.upper() for code, label in WEEKDAYS}  # MO -> MON
_FROM_CRON_DAY = {v: k for k, v in _CRON_DAY.items()}
_FROM_CRON_NUMBER = {0: "SU", 1: "MO", 2: "TU", 3: "WE", 4: "TH", 5: "FR", 6: "SA", 7: "SU"}
_ORDER = [code for code, _ in WEEKDAYS]
_TIME = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")
_NUMBER = re.compile(r"^\d+$")


class BuilderError(ValueError):
    """A builder input that cannot become a rule; ``field`` names the builder field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True, kw_only=True)
class BuilderSpec:
    repeat: str
    every: int | None = None
    at_times: tuple[tuple[int, int], ...] = ()
    weekdays: tuple[str, ...] = ()
    monthly_on: str = "day"
    month_day: int | None = None
    nth: int | None = None
    nth_weekday: str = ""
    once_at: datetime | None = None


def parse_times(text: str) -> tuple[tuple[int, int], ...]:
    """``"09:00, 17:30"`` -> ((9, 0), (17, 30)); raises ``BuilderError`` on ``at_times``."""
    items = [part.strip() for part in re.split(r"[,\s]+", text or "") if part.strip()]
    if not items:
        raise BuilderError("at_times", "give at least one time of day, e.g. 09:00")
    times = []
    for item in items:
        match = _TIME.match(item)
        if match is None:
            raise BuilderError(
                "at_times", f"{item!r} is not a time of day; write HH:MM, e.g. 09:00 or 17:30"
            )
        times.append((int(match.group(1)), int(match.group(2))))
    return tuple(sorted(set(times)))


def format_times(times: tuple[tuple[int, int], ...]) -> str:
    return ", ".join(f"{h:02d}:{m:02d}" for h, m in times)


def _grid(times: tuple[tuple[int, int], ...]) -> tuple[list[int], list[int]]:
    """Hours and minutes whose every combination is exactly ``times`` (what cron can say)."""
    hours = sorted({h for h, _ in times})
    minutes = sorted({m for _, m in times})
    if len(hours) * len(minutes) != len(times):
        raise BuilderError(
            "at_times",
            f"{format_times(times)} cannot be one rule: a rule runs at every combination of its "
            "hours and minutes; use times that share their minutes (09:00, 17:00), two "
            "schedules, or the advanced field",
        )
    return hours, minutes


def _join(values: list[int]) -> str:
    return ",".join(str(v) for v in values)


def to_rule(spec: BuilderSpec) -> tuple[str, str]:
    """``(kind, rule)`` for the builder's choices; raises ``BuilderError``."""
    if spec.repeat in ("minutes", "hours"):
        return _every(spec)
    if spec.repeat == "once":
        if spec.once_at is None:
            raise BuilderError("once_at", "give the local date and time to run at")
        return "once", spec.once_at.replace(tzinfo=None, microsecond=0).isoformat()
    hours, minutes = _grid(spec.at_times)
    if spec.repeat == "daily":
        return "cron", f"{_join(minutes)} {_join(hours)} * * *"
    if spec.repeat == "weekly":
        if not spec.weekdays:
            raise BuilderError("weekdays", "choose at least one weekday")
        days = ",".join(_CRON_DAY[d] for d in sorted(spec.weekdays, key=_ORDER.index))
        return "cron", f"{_join(minutes)} {_join(hours)} * * {days}"
    if spec.repeat == "monthly":
        return _monthly(spec, hours, minutes)
    raise BuilderError("repeat", f"unknown choice {spec.repeat!r}")


def _every(spec: BuilderSpec) -> tuple[str, str]:
    n = spec.every
    limit = 59 if spec.repeat == "minutes" else 23
    if n is None or not 1 <= n <= 10_000:
        raise BuilderError("every", f"give a whole number of {spec.repeat}, at least 1")
    if spec.repeat == "minutes" and 60 % n == 0:  # on the clock: :00, :15, :30, :45
        return "cron", ("* * * * *" if n == 1 else f"*/{n} * * * *")
    if spec.repeat == "hours" and 24 % n == 0 and n <= limit:
        return "cron", ("0 * * * *" if n == 1 else f"0 */{n} * * *")
    seconds = n * (60 if spec.repeat == "minutes" else 3600)
    return "interval", str(seconds)  # off the clock's grid: an absolute interval


def _monthly(spec: BuilderSpec, hours: list[int], minutes: list[int]) -> tuple[str, str]:
    at = f"BYHOUR={_join(hours)};BYMINUTE={_join(minutes)};BYSECOND=0"
    if spec.monthly_on == "day":
        if spec.month_day is None or not 1 <= spec.month_day <= 31:
            raise BuilderError("month_day", "give a day of the month from 1 to 31")
        return "cron", f"{_join(minutes)} {_join(hours)} {spec.month_day} * *"
    if spec.monthly_on == "last":
        return "rrule", f"FREQ=MONTHLY;BYMONTHDAY=-1;{at}"
    if spec.monthly_on == "nth":
        if spec.nth not in (1, 2, 3, 4, -1) or spec.nth_weekday not in _ORDER:
            raise BuilderError(
                "nth_weekday", "choose which weekday of the month, e.g. first Monday"
            )
        return "rrule", f"FREQ=MONTHLY;BYDAY={spec.nth}{spec.nth_weekday};{at}"
    raise BuilderError("monthly_on", f"unknown choice {spec.monthly_on!r}")


def from_rule(kind: str, rule: str) -> BuilderSpec | None:
    """The builder's choices for a stored rule, or ``None`` when it cannot express it."""
    rule = (rule or "").strip()
    try:
        if kind == "cron":
            return _from_cron(rule)
        if kind == "rrule":
            return _from_rrule(rule)
        if kind == "interval" and _NUMBER.match(rule):
            return _from_seconds(int(rule))
        if kind == "once":
            at = datetime.fromisoformat(rule)
            return None if at.tzinfo is not None else BuilderSpec(repeat="once", once_at=at)
    except (ValueError, KeyError):
        return None
    return None


def _from_seconds(seconds: int) -> BuilderSpec | None:
    if seconds % 3600 == 0:
        return BuilderSpec(repeat="hours", every=seconds // 3600)
    if seconds % 60 == 0:
        return BuilderSpec(repeat="minutes", every=seconds // 60)
    return None


def _from_cron(rule: str) -> BuilderSpec | None:
    parts = rule.split()
    if len(parts) != 5:
        return None
    minute, hour, dom, month, dow = parts
    if month != "*":
        return None
    if (hour, dom, dow) == ("*", "*", "*"):
        step = re.fullmatch(r"\*(?:/(\d+))?", minute)
        return BuilderSpec(repeat="minutes", every=int(step.group(1) or 1)) if step else None
    if minute == "0" and (dom, dow) == ("*", "*"):
        step = re.fullmatch(r"\*(?:/(\d+))?", hour)
        if step:
            return BuilderSpec(repeat="hours", every=int(step.group(1) or 1))
    times = _cron_times(minute, hour)
    if times is None:
        return None
    if dom == "*" and dow == "*":
        return BuilderSpec(repeat="daily", at_times=times)
    if dom == "*":
        days = _cron_days(dow)
        return BuilderSpec(repeat="weekly", at_times=times, weekdays=days) if days else None
    if dow == "*" and _NUMBER.match(dom) and 1 <= int(dom) <= 31:
        return BuilderSpec(repeat="monthly", at_times=times, monthly_on="day", month_day=int(dom))
    return None


def _numbers(text: str, top: int) -> list[int] | None:
    values = text.split(",")
    if not all(_NUMBER.match(v) and int(v) <= top for v in values):
        return None
    return [int(v) for v in values]


def _cron_times(minute: str, hour: str) -> tuple[tuple[int, int], ...] | None:
    minutes, hours = _numbers(minute, 59), _numbers(hour, 23)
    if minutes is None or hours is None:
        return None
    return tuple(sorted({(h, m) for h in hours for m in minutes}))


def _cron_days(text: str) -> tuple[str, ...] | None:
    days = set()
    for item in text.upper().split(","):
        first, dash, last = item.partition("-")
        if dash and first in _FROM_CRON_DAY and last in _FROM_CRON_DAY:  # MON-FRI, FRI-SUN
            start, end = _ORDER.index(_FROM_CRON_DAY[first]), _ORDER.index(_FROM_CRON_DAY[last])
            if start > end:
                return None
            days.update(_ORDER[start : end + 1])
        elif _NUMBER.match(item) and int(item) <= 7:
            days.add(_FROM_CRON_NUMBER[int(item)])
        elif item in _FROM_CRON_DAY:
            days.add(_FROM_CRON_DAY[item])
        else:
            return None
    return tuple(sorted(days, key=_ORDER.index))


def _from_rrule(rule: str) -> BuilderSpec | None:
    parts = dict(item.split("=", 1) for item in rule.upper().split(";") if item)
    if parts.pop("FREQ", "") != "MONTHLY" or parts.pop("BYSECOND", "0") != "0":
        return None
    times = _cron_times(parts.pop("BYMINUTE", ""), parts.pop("BYHOUR", ""))
    if times is None:
        return None
    if parts == {"BYMONTHDAY": "-1"}:
        return BuilderSpec(repeat="monthly", at_times=times, monthly_on="last")
    match = re.fullmatch(r"(-1|[1-4])(MO|TU|WE|TH|FR|SA|SU)", parts.get("BYDAY", ""))
    if match and len(parts) == 1:
        return BuilderSpec(
            repeat="monthly",
            at_times=times,
            monthly_on="nth",
            nth=int(match.group(1)),
            nth_weekday=match.group(2),
        )
    return None
