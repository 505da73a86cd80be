"""``manage.py schedule_preview``: the next slots of a timing rule, as a table or as JSON.

A thin adapter: parse the arguments, ask the pure time engine, format. The clock is read here,
at the edge, and only when neither ``--after`` nor ``--from`` is given. ``--schedule ID``
previews a stored schedule through ``definitions.timing_for``, the function the beat evaluates
it with (active window, bounds and count included), from the slot the beat will handle next.
Every slot is searched for under the settings' search budget (``SCHEDULER_SEARCH_CANDIDATES``,
``SCHEDULER_SEARCH_SPAN_DAYS``), as the beat and validation search: when it runs out, the
preview ends there and says why.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError, CommandParser
from django.utils import timezone as django_timezone

from scheduler_app.authoring.preview import (
    PreviewSlots,
    calendar_notes,
    parse_from,
    policy_text,
    preview_slots,
    utc_text,
)
from scheduler_app.definition.schedule import search_budget, timing_for
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.management.commands._oneline import OneLineErrors, bad_argument
from scheduler_app.management.commands._schedule_cli import aligned
from scheduler_app.management.commands._text_rule import parsed_text, text_options
from scheduler_app.models import Schedule
from scheduler_app.timing import TICK, Ambiguous, Kind, Nonexistent, Timing, build_timing, describe
from scheduler_app.timing.phrases import ParsedText
from scheduler_app.timing.zones import get_zone

MAX_COUNT = 10_000
OUT_OF_RANGE = (
    "a date is out of range: keep --after, --anchor, --at and the slots within years 1-9999 "
    "(in UTC and in --tz)"
)
RULE_OPTIONS = ("cron", "rrule", "every", "at", "solar", "text")
BOUND_OPTIONS = ("starts_at", "ends_at", "max_count", "window", "exclude_holidays")
# Engine field names (before the first dot) -> the option a user of this command typed.
OPTION_OF_FIELD = {
    "cron": "--cron",
    "rrule": "--rrule",
    "every": "--every",
    "at": "--at",
    "anchor": "--anchor",
    "timezone": "--tz",
    "dst": "--nonexistent/--ambiguous",
    "starts_at": "--starts-at",
    "ends_at": "--ends-at",
    "max_count": "--max-count",
    "window": "--window",
    "active_window": "--window",
    "text": "--text",
    "exclude_holidays": "--exclude-holidays",
    "solar": "--solar/--latitude/--longitude",
}


class Command(OneLineErrors):
    help = "Show the next slots of a cron, RRULE, interval or one-time rule, with DST notes."
    requires_system_checks: list[str] = []  # a pure preview: no models (--schedule reads one)

    def add_arguments(self, parser: CommandParser) -> None:
        _add_rule_arguments(parser)
        parser.add_argument(
            "--schedule",
            metavar="ID",
            help="a stored schedule: its next slots exactly as the beat computes them",
        )
        _add_zone_arguments(parser)
        _add_bound_arguments(parser)
        _add_range_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            timing, after = _timing_and_after(options)
            found = preview_slots(timing, after, _check_count(options["count"]))
        except ScheduleValidationError as error:
            raise bad_argument(_option_message(error)) from None
        except ValueError as error:
            raise bad_argument(str(error)) from None
        except OverflowError:  # datetime arithmetic beyond year 1 or 9999
            raise CommandError(OUT_OF_RANGE, returncode=2) from None
        notes = calendar_notes(timing, after, found.rows)
        if options["json"]:
            output = _as_json(timing, found, notes, options.get("parsed"))
        else:
            heading = f"Slots {'from' if options.get('start') else 'after'} {_utc(after, options)}"
            table = _as_table(timing, heading, found, options.get("parsed"))
            output = "\n".join([table, *notes])
        self.stdout.write(output)


def _add_rule_arguments(parser: CommandParser) -> None:
    """The rule: one of --cron, --rrule, --every, --at, --text, or --solar at a place; the
    holidays it leaves out."""
    rule = parser.add_mutually_exclusive_group()  # none: --schedule
    rule.add_argument("--cron", metavar="EXPR", help="five-field cron expression or @macro")
    rule.add_argument(
        "--rrule",
        metavar="RULE",
        help="RFC 5545 RRULE, e.g. FREQ=DAILY;BYHOUR=9, or content lines separated by "
        "newlines: DTSTART;TZID=..., RRULE:..., EXDATE[;TZID=...]:..., RDATE[;TZID=...]:...",
    )
    rule.add_argument("--every", metavar="DURATION", help="fixed-rate interval: 90s, 15m, 6h")
    rule.add_argument("--at", metavar="ISO", help="one time: with offset an instant, else local")
    rule.add_argument(
        "--text",
        metavar="WORDS",
        help="English, e.g. 'every weekday at 9:00 in Europe/Riga': shows the rule it means",
    )
    parser.add_argument(
        "--solar",
        metavar="EVENT",
        help="sunrise, sunset, dawn, dusk or noon at --latitude/--longitude, each day",
    )
    parser.add_argument("--latitude", metavar="LAT", help="--solar: decimal degrees, north +")
    parser.add_argument("--longitude", metavar="LON", help="--solar: decimal degrees, east +")
    parser.add_argument(
        "--exclude-holidays",
        dest="exclude_holidays",
        metavar="CC",
        help="leave out slots on public holidays there: LV, DE, US-NY ...",
    )


def _add_zone_arguments(parser: CommandParser) -> None:
    """The rule's grid origin, its zone and how a DST gap or fold is resolved."""
    parser.add_argument(
        "--anchor",
        metavar="ISO",
        help="DTSTART of --rrule / grid origin of --every (default: --from or --after)",
    )
    parser.add_argument(
        "--tz",
        metavar="ZONE",
        help="IANA zone (default: the zone --text or a DTSTART line names, else UTC)",
    )
    parser.add_argument("--nonexistent", default="auto", choices=[c.value for c in Nonexistent])
    parser.add_argument("--ambiguous", default="auto", choices=[c.value for c in Ambiguous])


def _add_bound_arguments(parser: CommandParser) -> None:
    """The bounds of the slots: first and last instants, a count, an active window."""
    parser.add_argument(
        "--starts-at", dest="starts_at", metavar="ISO", help="no slot before this instant"
    )
    parser.add_argument(
        "--ends-at", dest="ends_at", metavar="ISO", help="no slot after this instant"
    )
    parser.add_argument(
        "--max-count",
        dest="max_count",
        type=int,
        metavar="N",
        help="at most N slots counted from --starts-at (needs --starts-at)",
    )
    parser.add_argument(
        "--window",
        metavar="TEXT",
        help="active window in --tz, e.g. 'MON-FRI 09:00-18:00'",
    )
    parser.add_argument(
        "--window-policy",
        dest="window_policy",
        default="defer",
        choices=["defer", "skip"],
        help="a slot outside --window: defer to the next opening (default) or skip it",
    )


def _add_range_arguments(parser: CommandParser) -> None:
    """Where the preview starts, how many slots it shows, and as what."""
    parser.add_argument(
        "--after",
        metavar="ISO",
        help="instant with offset or Z; slots strictly after it "
        "(default now; with --schedule: just before its next run)",
    )
    parser.add_argument(
        "--from",
        dest="start",
        metavar="DATE",
        help="start at this date or date and time, local in --tz unless it has an offset "
        "(e.g. 2027-03-20 or 2027-03-20T08:00); slots at or after it",
    )
    parser.add_argument("--count", type=int, default=10, help=f"how many slots, 1..{MAX_COUNT}")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _timing_and_after(options: dict[str, Any]) -> tuple[Timing, datetime]:
    """The timing to preview and the instant its slots come strictly after."""
    _check_start(options)
    options["parsed"] = text_options(options)
    if options.get("schedule"):
        timing, after = _stored(options)
        if options.get("start"):
            after = parse_from(options["start"], timing.zone, "--from") - TICK
        return timing, after
    start = _start(options)
    timing = _build(options, default_anchor=start)
    return timing, start - TICK if options.get("start") else start


def _utc(after: datetime, options: dict[str, Any]) -> str:
    return utc_text(after + TICK if options.get("start") else after)


def _stored(options: dict[str, Any]) -> tuple[Timing, datetime]:
    """The stored schedule's timing (the beat's ``timing_for``) and where the beat stands."""
    names = (*RULE_OPTIONS, *BOUND_OPTIONS, "anchor")
    given = [f"--{n.replace('_', '-')}" for n in names if options.get(n)]
    if given:
        raise ValueError(
            f"--schedule: {', '.join(given)} cannot be combined with it (the stored schedule "
            "has its own); preview the rule with --cron/--rrule/--every/--at to try other values"
        )
    try:
        schedule = Schedule.objects.get(pk=options["schedule"])
    except (Schedule.DoesNotExist, ValueError, ValidationError):
        raise ValueError(
            f"--schedule: no schedule with id {options['schedule']!r}; "
            "list them in the admin or with export_schedules"
        ) from None
    timing = timing_for(schedule)
    if options["after"] is not None:
        return timing, _parse_after(options["after"])
    if schedule.next_run_at is not None:
        return timing, schedule.next_run_at - TICK
    return timing, django_timezone.now().replace(microsecond=0)


def _check_start(options: dict[str, Any]) -> None:
    if options.get("start") and options.get("after"):
        raise ValueError(
            "--from and --after both say where the slots start; keep one (--from DATE is "
            "local in --tz and includes a slot at that time, --after ISO is an instant)"
        )


def _start(options: dict[str, Any]) -> datetime:
    """Where an ad-hoc preview starts (also the default anchor): --from, --after or now."""
    if options.get("start"):
        return parse_from(options["start"], get_zone(options["tz"], "timezone"), "--from")
    return _parse_after(options["after"])


def _parse_after(text: str | None) -> datetime:
    if text is None:
        return django_timezone.now().replace(microsecond=0)
    return _instant(text, "--after")


def _instant(text: str, option: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"{option}: {text[:60]!r} is not an ISO 8601 instant; e.g. 2026-03-28T00:00:00Z"
        ) from None
    if value.utcoffset() is None:
        raise ValueError(
            f"{option}: {text[:60]!r} has no offset; add Z or one, e.g. {value.isoformat()}Z"
        )
    return value.astimezone(UTC)


def _check_count(count: Any) -> int:
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise ValueError(f"--count: must be a whole number from 1 to {MAX_COUNT}, got {count!r}")
    return count


def _build(options: dict[str, Any], *, default_anchor: datetime) -> Timing:
    chosen = [name for name in RULE_OPTIONS if options.get(name) is not None]
    if len(chosen) != 1:
        raise ValueError(
            "one of the arguments --cron --rrule --every --at --solar is required "
            "(or --schedule ID)"
        )
    kind = {
        "cron": Kind.CRON,
        "rrule": Kind.RRULE,
        "every": Kind.INTERVAL,
        "at": Kind.ONCE,
        "solar": Kind.SOLAR,
    }
    anchor = options["anchor"]
    if anchor is not None and chosen[0] not in ("rrule", "every"):
        raise ValueError(f"--anchor: only --rrule and --every take an anchor, not --{chosen[0]}")
    if anchor is None and chosen[0] in ("rrule", "every"):
        anchor = default_anchor
    starts_at = options.get("starts_at")
    max_count = options.get("max_count")
    if max_count is not None and (isinstance(max_count, bool) or max_count < 1):
        raise ValueError(f"--max-count: must be a whole number of at least 1, got {max_count!r}")
    if max_count is not None and starts_at is None:
        raise ValueError("--max-count: counts slots from --starts-at; give --starts-at too")
    return build_timing(
        kind=kind[chosen[0]],
        rule=_solar_rule(options) if chosen[0] == "solar" else options[chosen[0]],
        timezone=options["tz"],
        anchor=anchor,
        nonexistent=options["nonexistent"],
        ambiguous=options["ambiguous"],
        starts_at=_instant(starts_at, "--starts-at") if starts_at else None,
        ends_at=_instant(options["ends_at"], "--ends-at") if options.get("ends_at") else None,
        max_count=max_count,
        window=options.get("window") or None,
        window_policy=options.get("window_policy") or "defer",
        exclude_holidays=options.get("exclude_holidays") or None,
        budget=search_budget(),
    )


def _solar_rule(options: dict[str, Any]) -> str:
    """``--solar EVENT --latitude LAT --longitude LON`` as the stored rule text."""
    missing = [f"--{name}" for name in ("latitude", "longitude") if options.get(name) is None]
    if missing:
        raise ValueError(
            f"--solar: needs {' and '.join(missing)}, e.g. --solar sunrise "
            "--latitude 56.9496 --longitude 24.1052"
        )
    return f"{options['solar']} {options['latitude']} {options['longitude']}"


def _as_json(
    timing: Timing, found: PreviewSlots, notes: list[str], parsed: ParsedText | None = None
) -> str:
    data: dict[str, Any] = {"description": describe(timing), "timezone": timing.zone.key}
    if parsed is not None:  # --text: the structured rule it means, as it would be stored
        data.update({key: value for key, value in parsed.as_json().items() if key != "timezone"})
    data["slots"] = [row.as_json() for row in found.rows]
    if found.stopped:  # the search budget ran out before --count slots
        data["stopped"] = found.stopped
    if notes:
        data["skipped"] = notes
    return json.dumps(data, indent=2)


def _as_table(
    timing: Timing, heading: str, found: PreviewSlots, parsed: ParsedText | None = None
) -> str:
    lines = [describe(timing), f"{heading}; {policy_text(timing)}", ""]
    if parsed is not None:  # --text: the structured rule that would be stored
        lines.insert(1, parsed_text(parsed))
    rows = found.rows
    stopped = [f"Stopped: {found.stopped}"] if found.stopped else []
    if not rows:
        empty = "No slots: the rule does not fire after that instant."
        return "\n".join([*lines, *(stopped or [empty])])
    header = (f"Local ({timing.zone.key})", "UTC", "Note")
    cells = [(_local_text(row.local), utc_text(row.local), row.note or "") for row in rows]
    return "\n".join([*lines, *aligned([header, *cells]), *stopped])


def _local_text(local: datetime) -> str:
    text = local.isoformat(sep=" ", timespec="seconds")  # pads the year, unlike strftime
    return f"{local:%a} {text[:19]} {text[19:]}"


def _option_message(error: ScheduleValidationError) -> str:
    head, _, rest = error.field.partition(".")
    option = OPTION_OF_FIELD.get(head, head)
    return f"{option} ({rest}): {error.message}" if rest else f"{option}: {error.message}"
