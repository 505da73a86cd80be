"""What both sources of a Celery beat migration share: the ``Mapping`` an entry becomes, the
``Refused`` that says why it cannot, report text that never raises, and the readers of the values
both hold (args, kwargs, intervals, solar events, routing options, instants).

Each source entry becomes a ``Mapping``: the schedule it maps to (a ``Desired`` with a stable
key, so a re-run updates or leaves it unchanged, never imports it twice), notes on what was not
carried over, or the reason it was refused.
"""

from __future__ import annotations

import logging
import math
import reprlib
from collections.abc import Mapping as MappingType
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler_app.authoring.importing import Desired
from scheduler_app.authoring.options import ROUTING_OPTIONS
from scheduler_app.policies.limits import MAX_JSON_DEPTH
from scheduler_app.timing.durations import MAX_DURATION

logger = logging.getLogger("scheduler_app.celery_beat_import")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""Interval grids start here: slots fall on whole multiples of the interval since the Unix
epoch (a 15-minute interval fires at :00, :15, ...), so re-running the import is stable."""
SOLAR_EVENTS = {
    "sunrise": "sunrise",
    "sunset": "sunset",
    "dawn_civil": "dawn",
    "dusk_civil": "dusk",
    "solar_noon": "noon",
}
"""Celery's (and django-celery-beat's) solar events -> this scheduler's (civil twilight)."""
SOLAR_REFUSAL = (
    "solar event {event} has no equivalent here (nautical and astronomical twilight are not "
    "offered); use one of {choices} (civil dawn and dusk), or a cron at a fixed local time"
)
ROUTING_NOTE = (
    "not carried over: {name}={value} (not a routing option this scheduler keeps; route "
    "the task with CELERY_TASK_ROUTES, which also applies to occurrences)"
)
MAX_REASON = 500
"""Reasons and notes are cut to this many characters: one line of a report, not a dump."""
CONTENT_ERRORS: tuple[type[Exception], ...] = (
    ArithmeticError,
    LookupError,
    RecursionError,
    TypeError,
    ValueError,
)
"""What checking one entry's plain values can raise beyond the scheduler's own errors
(a datetime that overflows, an integer past Python's digit limit, JSON nested too deep).
Anything else (a lost database connection) stops the import and rolls all of it back."""
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 60
_REPR.maxlevel = 3


@dataclass(frozen=True)
class Mapping:
    """One source entry and what it becomes."""

    label: str
    """The stable key of the schedule it maps to: ``celery-beat:<entry name>``."""
    source: str
    """The entry in its own terms, e.g. ``crontab(0 8 * * 1-5) demo.ping``."""
    desired: Desired | None
    refusal: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)


class Refused(Exception):
    """An entry that cannot be mapped; the message says why and what to do."""


# -- text for reports: whatever the entry holds, one bounded printable line ---------------------


def shown(value: Any) -> str:
    """A short ``repr`` of a user's object that never raises (a custom ``__repr__`` may, and
    so does ``repr`` of an integer past Python's digit limit)."""
    try:
        return one_line(_REPR.repr(value))
    except Exception:  # any user-defined __repr__ may raise anything
        return f"<{type(value).__name__} object>"


def one_line(text: str) -> str:
    """``text`` as one printable line (newlines, NUL and lone surrogates escaped), bounded."""
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."


def plain(value: Any) -> str:
    """Text as it is (one line, bounded), anything else as ``shown``."""
    return one_line(value) if isinstance(value, str) else shown(value)


def unreadable(exc: BaseException) -> str:
    """The reason for an entry whose content raised while it was read or checked."""
    return f"could not be read ({type(exc).__name__}: {shown(message(exc))}); fix the entry"


def log_refused(what: str, label: str, reason: str) -> None:
    """Log that the entry ``label`` was refused (``what``: "beat_schedule entry", ...)."""
    extra = {"action": "schedule.import.refused", "source": one_line(label)}
    logger.warning(f"{what} refused: %s", reason, extra=extra)


def message(exc: BaseException) -> str:
    """``str(exc)``, or "" when the exception's own ``__str__`` raises."""
    try:
        return str(exc)
    except Exception:  # a user-defined exception's __str__ may raise
        return ""


# -- values both sources hold --------------------------------------------------------------------


def beat_args(args: Any) -> list[Any]:
    """The entry's positional args as JSON will carry them (tuples become lists)."""
    if args is None:
        return []
    if not isinstance(args, list | tuple):
        raise Refused(f"args must be a list or tuple, got {type(args).__name__} {shown(args)}")
    return list(_as_json(args, "args", 1))


def solar_timing(event: Any, latitude: Any, longitude: Any, zone: str) -> dict[str, Any]:
    """A Celery ``solar(event, lat, lon)`` as a ``solar`` schedule; slots fall on local dates
    of ``zone`` (one event a day whichever zone: it decides only where a day begins)."""
    mapped = SOLAR_EVENTS.get(str(event))
    if mapped is None:
        choices = ", ".join(SOLAR_EVENTS)
        raise Refused(SOLAR_REFUSAL.format(event=shown(event), choices=choices))
    try:
        rule = f"{mapped} {float(latitude):g} {float(longitude):g}"
    except (TypeError, ValueError):
        raise Refused(
            f"solar latitude/longitude {shown(latitude)}, {shown(longitude)} are not numbers"
        ) from None
    return {"kind": "solar", "rule": rule, "timezone": zone}


def beat_kwargs(value: Any) -> dict[str, Any]:
    """The entry's kwargs as JSON will carry them: tuples become lists (Celery's JSON
    serializer sends them so), keys must be text (JSON would turn ``1`` into ``"1"``, and a
    re-run would then see a change). Everything else is checked by the service's strict JSON
    rules (sets, NaN, huge integers, deep nesting refused there)."""
    if value is None:
        return {}
    if not isinstance(value, MappingType):
        raise Refused(
            f"kwargs must be a dict of keyword arguments, got {type(value).__name__}; "
            "e.g. {'report': 'daily'}"
        )
    result = _as_json(value, "kwargs", 1)
    return dict(result)


def _as_json(value: Any, path: str, depth: int) -> Any:
    if depth > MAX_JSON_DEPTH + 1:
        return value  # left as is: the service refuses the nesting with its own message
    if isinstance(value, MappingType):
        for key in value:
            if not isinstance(key, str):
                raise Refused(
                    f"{path}: keys must be text, got {type(key).__name__} {shown(key)}; "
                    "JSON would turn it into a string"
                )
        return {key: _as_json(item, f"{path}.{key}", depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_as_json(item, f"{path}[{n}]", depth + 1) for n, item in enumerate(value)]
    return value


def interval_timing(every: Any) -> dict[str, Any]:
    """A whole number of seconds from 1 s to the longest duration the rules accept."""
    longest = int(MAX_DURATION.total_seconds())
    if isinstance(every, timedelta):
        seconds: float = every.total_seconds()
    elif isinstance(every, int) and not isinstance(every, bool):
        seconds = every if abs(every) <= longest else (math.inf if every > 0 else -math.inf)
    elif isinstance(every, float):
        seconds = every
    else:
        raise Refused(f"unsupported interval {shown(every)}; use a timedelta or seconds")
    if math.isnan(seconds) or seconds < 1 or (math.isfinite(seconds) and seconds % 1):
        raise Refused(f"an interval of {shown(every)}s is not a whole number of seconds >= 1")
    if seconds > longest:
        raise Refused(
            f"an interval of {shown(every)}s is too long: the longest interval is {longest} s "
            "(100 years)"
        )
    return {"kind": "interval", "rule": str(int(seconds)), "anchor": EPOCH}


def routing_options(values: MappingType[str, Any], notes: list[str]) -> dict[str, Any]:
    """The routing options of ``values`` that are set and well-typed; a note for the rest."""
    kept: dict[str, Any] = {}
    for name, expected in ROUTING_OPTIONS.items():
        value = values.get(name)
        if value is None or (isinstance(value, str) and not value):
            continue
        if isinstance(value, expected) and not isinstance(value, bool):
            if isinstance(value, int) and not 0 <= value <= 255:
                notes.append(f"not carried over: priority={shown(value)} (must be 0-255)")
                continue
            kept[name] = value
        else:
            notes.append(one_line(ROUTING_NOTE.format(name=name, value=shown(value))))
    return kept


def aware(value: datetime) -> datetime:
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except (OverflowError, ValueError):  # datetime.min in a zone east of UTC, a broken tzinfo
        raise Refused(f"{shown(value)} cannot be expressed in UTC") from None
