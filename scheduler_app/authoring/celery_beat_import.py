"""Migration from the incumbents: Celery's ``beat_schedule`` (here) and django-celery-beat's
tables (``celery_beat_tables``), planned and applied here.

Each source entry becomes a ``Mapping``: the schedule it maps to (a ``Desired`` with a stable
key, so a re-run updates or leaves it unchanged, never imports it twice), notes on what was not
carried over, or the reason it was refused. Whatever an entry holds, it is mapped or refused
alone: one bad entry never stops the others, and a refused one changes nothing stored.
"""

from __future__ import annotations

import logging
import math
import reprlib
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Mapping as MappingType
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from celery.schedules import crontab, schedule, solar
from django.db import DataError, IntegrityError, transaction

from scheduler_app.authoring import importing
from scheduler_app.authoring.importing import Change, Desired, Plan
from scheduler_app.clock import Clock
from scheduler_app.errors import SchedulerError, ScheduleValidationError
from scheduler_app.policies.limits import MAX_JSON_DEPTH, NUMBER_LIMITS, TEXT_LENGTHS, check_text
from scheduler_app.timing.durations import MAX_DURATION

logger = logging.getLogger("scheduler_app.celery_beat_import")

BEAT_PREFIX = "celery-beat:"
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
ROUTING = {"queue": str, "routing_key": str, "exchange": str, "priority": int}
"""Per-entry routing options kept in ``Schedule.options`` (the schedule.v1 ``target.options``)."""
ROUTING_NOTE = (
    "not carried over: {name}={value} (not a routing option this scheduler keeps; route "
    "the task with CELERY_TASK_ROUTES, which also applies to occurrences)"
)
PERIODS = {"days": 86400, "hours": 3600, "minutes": 60, "seconds": 1, "microseconds": 1e-6}
KEY_ROOM = TEXT_LENGTHS["key"] - len(BEAT_PREFIX)
"""The longest entry name whose key (``celery-beat:<name>``) fits the key column."""
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
APPLY_ERRORS: tuple[type[Exception], ...] = (
    SchedulerError,
    IntegrityError,
    DataError,
    *CONTENT_ERRORS,
)
"""What writing one entry can raise and leave the others to go on (in its own savepoint)."""
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
    return f"could not be read ({type(exc).__name__}: {shown(_message(exc))}); fix the entry"


def _message(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # a user-defined exception's __str__ may raise
        return ""


# -- Celery's beat_schedule --------------------------------------------------------------------


def from_beat_schedule(entries: Any, app_timezone: str) -> list[Mapping]:
    """Map every ``beat_schedule`` entry, in name order; each one is mapped or refused alone."""
    if not isinstance(entries, MappingType):
        raise Refused(
            f"beat_schedule must be a dict of entries by name, got {type(entries).__name__}"
        )
    mappings: list[Mapping] = []
    labels: set[str] = set()
    for name in sorted(entries, key=_name_order):
        label = _unique(_beat_label(name), labels)
        mappings.append(_guarded_beat_entry(label, name, entries, app_timezone))
    return mappings


def _name_order(name: Any) -> tuple[int, str]:
    """Text names in order, then the others (refused) by their repr: never a TypeError."""
    return (0, name) if isinstance(name, str) else (1, shown(name))


def _beat_label(name: Any) -> str:
    return f"{BEAT_PREFIX}{name}" if isinstance(name, str) else f"{BEAT_PREFIX}{shown(name)}"


def _unique(label: str, taken: set[str]) -> str:
    """Text names are unique keys; a non-text name may print like one (``1`` and ``"1"``)."""
    candidate, count = label, 1
    while candidate in taken:
        count += 1
        candidate = f"{label} (entry {count})"
    taken.add(candidate)
    return candidate


def _guarded_beat_entry(
    label: str, name: Any, entries: MappingType[Any, Any], app_timezone: str
) -> Mapping:
    entry: Any = None
    try:
        entry = entries[name]
        return _beat_entry(label, name, entry, app_timezone)
    except Refused as exc:
        return Mapping(label, _safe_describe(entry), None, refusal=one_line(str(exc)))
    except Exception as exc:  # the entry's objects are user code: any may raise
        logger.warning(
            "beat_schedule entry refused: %s",
            unreadable(exc),
            extra={"action": "schedule.import.refused", "source": one_line(label)},
        )
        return Mapping(label, _safe_describe(entry), None, refusal=unreadable(exc))


def _beat_entry(label: str, name: Any, entry: Any, app_timezone: str) -> Mapping:
    _check_name(name)
    task = _task(entry)
    schedule_value = entry.get("schedule")
    timing = _beat_timing(schedule_value, app_timezone)
    source = f"{_describe_source(schedule_value)} {task}"
    args = beat_args(entry.get("args"))
    kwargs = beat_kwargs(entry.get("kwargs"))
    fields, notes = _options(entry.get("options"))
    fields.update(timing, task=task, args=args, kwargs=kwargs, key=label, name=name)
    return Mapping(label, source, Desired(label=label, fields=fields), notes=tuple(notes))


def _check_name(name: Any) -> None:
    if not isinstance(name, str):
        raise Refused(
            f"entry names must be text, got {type(name).__name__} {shown(name)}; rename the entry"
        )
    if len(name) > KEY_ROOM:
        raise Refused(
            f"the entry's name is {len(name)} characters long; at most {KEY_ROOM} fit in its "
            f"schedule key ({BEAT_PREFIX!r} + name); shorten the name"
        )
    try:
        check_text("name", name)
    except ScheduleValidationError as exc:
        raise Refused(f"the entry's name {exc.message}") from None


def _task(entry: Any) -> str:
    if not isinstance(entry, MappingType) or entry.get("task") in (None, ""):
        raise Refused("an entry needs 'task' and 'schedule'")
    task = entry["task"]
    if not isinstance(task, str):
        raise Refused(f"'task' must be a task name (text), got {type(task).__name__}")
    return task


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


def _safe_describe(entry: Any) -> str:
    if isinstance(entry, MappingType):
        try:
            return one_line(f"{_describe_source(entry.get('schedule'))} {plain(entry.get('task'))}")
        except Exception:  # a user mapping's .get may raise; the reason says why
            return f"<{type(entry).__name__} entry>"
    return shown(entry)


def _describe_source(value: Any) -> str:
    if isinstance(value, crontab):
        return f"crontab({_cron_rule(value)})"
    if isinstance(value, solar):
        return f"solar({plain(value.event)}, {shown(value.lat)}, {shown(value.lon)})"
    if isinstance(value, schedule):
        return f"schedule(every {shown(_run_every(value))})"
    if isinstance(value, timedelta | int | float):
        return f"every {shown(value)}"
    return shown(value)


def _beat_timing(value: Any, app_timezone: str) -> dict[str, Any]:
    if isinstance(value, crontab):
        return {
            "kind": "cron",
            "rule": _cron_rule(value),
            "timezone": _crontab_zone(value, app_timezone),
        }
    if isinstance(value, solar):
        return solar_timing(value.event, value.lat, value.lon, app_timezone)
    if isinstance(value, schedule):
        return interval_timing(_run_every(value))
    if isinstance(value, timedelta | int | float) and not isinstance(value, bool):
        return interval_timing(value)
    raise Refused(
        f"unsupported schedule type {type(value).__name__}; use a crontab, a timedelta or a "
        "number of seconds"
    )


def _run_every(value: Any) -> Any:
    return value.run_every


def _cron_rule(value: Any) -> str:
    """The five fields as given to ``crontab()`` (``Any``: the stubs omit ``_orig_*``)."""
    parts = (
        value._orig_minute,
        value._orig_hour,
        value._orig_day_of_month,
        value._orig_month_of_year,
        value._orig_day_of_week,
    )
    return " ".join(_cron_field(part) for part in parts)


def _cron_field(part: Any) -> str:
    if isinstance(part, str):
        return part.replace(" ", "")
    if isinstance(part, Iterable):
        return ",".join(str(v) for v in sorted(part))
    return str(part)


def _crontab_zone(value: Any, app_timezone: str) -> str:
    """The zone the crontab is read in: its ``nowfun``'s zone if it has one, else the app's."""
    if value.nowfun is None:
        return app_timezone
    try:
        now = value.nowfun()
    except Exception as exc:  # nowfun is the user's function
        raise Refused(
            f"the crontab's nowfun raised {type(exc).__name__}: {shown(_message(exc))}; "
            "give it a function that returns an aware datetime"
        ) from None
    if not isinstance(now, datetime):
        raise Refused(f"the crontab's nowfun returned {shown(now)}, not a datetime")
    return _zone_name(now.tzinfo, "the crontab's nowfun")


def _zone_name(tz: Any, what: str) -> str:
    if tz is UTC:
        return "UTC"
    if isinstance(tz, ZoneInfo):
        return tz.key
    raise Refused(f"{what} returns datetimes in {shown(tz)}, not an IANA zone; use a ZoneInfo")


def app_timezone_name(app: Any) -> str:
    """The Celery app's zone (``timezone`` setting; UTC when unset)."""
    return _zone_name(app.timezone, "the Celery app's timezone") if app.conf.timezone else "UTC"


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


def _options(options: Any) -> tuple[dict[str, Any], list[str]]:
    if options is None:
        return {}, []
    if not isinstance(options, MappingType):
        raise Refused(
            f"options must be a dict of apply_async options, got {type(options).__name__}"
        )
    options = dict(options)
    fields: dict[str, Any] = {}
    notes: list[str] = []
    _expires(options.pop("expires", None), fields, notes)
    routing = routing_options(options, notes)
    if routing:
        fields["options"] = routing
    for name in sorted(options, key=_name_order):
        if name not in ROUTING:
            notes.append(
                one_line(ROUTING_NOTE.format(name=plain(name), value=shown(options[name])))
            )
    return fields, notes


def _expires(expires: Any, fields: dict[str, Any], notes: list[str]) -> None:
    """Celery's ``expires`` (seconds or an instant) becomes the deadline or the end."""
    if isinstance(expires, int | float) and not isinstance(expires, bool):
        if isinstance(expires, float) and not math.isfinite(expires):
            raise Refused(f"expires={shown(expires)} is not a number of seconds")
        longest = NUMBER_LIMITS["deadline"][1]
        if expires > longest:
            raise Refused(
                f"expires={shown(expires)} s is longer than the longest deadline ({longest} s)"
            )
        fields["deadline"] = max(1, int(expires))
    elif isinstance(expires, datetime):
        fields["ends_at"] = aware(expires)
    elif expires is not None:
        notes.append(f"not carried over: expires={shown(expires)}")


def routing_options(values: MappingType[str, Any], notes: list[str]) -> dict[str, Any]:
    """The routing options of ``values`` that are set and well-typed; a note for the rest."""
    kept: dict[str, Any] = {}
    for name, expected in ROUTING.items():
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


# -- planning ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MigrationPlan:
    """The mappings, the changes they make, and every entry that will not be imported."""

    mappings: tuple[Mapping, ...]
    plan: Plan
    refused: dict[str, str]

    def change_for(self, label: str) -> Change | None:
        return next((c for c in self.plan.changes if c.desired.label == label), None)


def plan_migration(
    mappings: Iterable[Mapping], now: datetime, *, mode: str | None = None
) -> MigrationPlan:
    """Compare the mapped schedules with the database (no writes).

    ``mode`` (live/shadow) is applied when given; otherwise new schedules are live and existing
    ones keep the mode they have (so a re-run does not flip shadow schedules live).
    """
    items = tuple(mappings)
    refused = {m.label: m.refusal for m in items if m.desired is None}
    desired = [_with_mode(m.desired, mode) for m in items if m.desired is not None]
    planned = _plan_each_apart_if_needed(desired, now, refused)
    for problem in planned.problems:
        refused[problem.label] = one_line(f"{problem.path}: {problem.message}")
    return MigrationPlan(items, planned, refused)


def _plan_each_apart_if_needed(
    desired: Sequence[Desired], now: datetime, refused: dict[str, str]
) -> Plan:
    """Plan the batch (a few queries); if one entry makes planning raise rather than report a
    problem, plan each alone to find it, refuse it, and plan the rest together again (the
    duplicate checks need the whole batch)."""
    try:
        return importing.plan(desired, now)
    except CONTENT_ERRORS:
        pass
    sound = []
    for item in desired:
        try:
            importing.plan([item], now)
        except CONTENT_ERRORS as exc:
            _refuse(refused, item.label, unreadable(exc))
        else:
            sound.append(item)
    return importing.plan(sound, now)


def _refuse(refused: dict[str, str], label: str, reason: str) -> None:
    refused[label] = reason
    logger.warning(
        "import entry refused: %s",
        reason,
        extra={"action": "schedule.import.refused", "source": one_line(label)},
    )


def _with_mode(desired: Desired, mode: str | None) -> Desired:
    if mode is not None:
        return replace(desired, fields={**desired.fields, "mode": mode})
    return replace(desired, keep_existing=desired.keep_existing | {"mode"})


def apply_migration(
    migration: MigrationPlan,
    *,
    clock: Clock | None = None,
    progress: Callable[[int], None] | None = None,
) -> MigrationPlan:
    """Create or update every mapped schedule; refused ones are left out.

    One transaction, each entry in a savepoint of its own: an entry the services refuse (or
    the database: a key taken meanwhile) is rolled back alone and moves to ``refused`` in the
    returned plan; the others are written. ``progress(n)`` is called as entries are done.
    """
    done: list[Change] = []
    refused = dict(migration.refused)
    with transaction.atomic():
        for change in migration.plan.changes:
            if _apply_one(change, clock, refused):
                done.append(change)
            if progress is not None:
                progress(1)
    carried_out = replace(migration.plan, changes=tuple(done))
    return replace(migration, plan=carried_out, refused=refused)


def _apply_one(change: Change, clock: Clock | None, refused: dict[str, str]) -> bool:
    if change.action == "unchanged":
        return True
    try:
        with transaction.atomic():
            importing.apply([change], clock=clock)
    except APPLY_ERRORS as exc:
        reason = str(exc) if isinstance(exc, SchedulerError) else unreadable(exc)
        _refuse(refused, change.desired.label, one_line(reason))
        return False
    return True
