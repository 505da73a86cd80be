"""``manage.py schedule_preview``: the next slots of a timing rule, as a table or as JSON.

A thin adapter: parse the arguments, ask the pure time engine, format. The clock is read here,
at the edge, and only when ``--after`` is not given.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from itertools import islice
from typing import Any, NoReturn

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone as django_timezone

from scheduler_app.errors import ScheduleValidationError
from scheduler_app.timing import (
    Ambiguous,
    Kind,
    Nonexistent,
    Timing,
    build_timing,
    describe,
    iter_annotated,
)
from scheduler_app.timing.rules import IntervalRule, OnceRule
from scheduler_app.timing.zones import FOLD_FIRST, FOLD_LAST, GAP_NEXT_VALID, GAP_SHIFT

MAX_COUNT = 10_000
OUT_OF_RANGE = (
    "a date is out of range: keep --after, --anchor, --at and the slots within years 1-9999 "
    "(in UTC and in --tz)"
)
RULE_OPTIONS = ("cron", "rrule", "every", "at")
# Engine field names (before the first dot) -> the option a user of this command typed.
OPTION_OF_FIELD = {
    "cron": "--cron",
    "rrule": "--rrule",
    "every": "--every",
    "at": "--at",
    "anchor": "--anchor",
    "timezone": "--tz",
    "dst": "--nonexistent/--ambiguous",
}

Row = tuple[datetime, str | None]  # (slot in the zone, human note or None)


class Command(BaseCommand):
    help = "Show the next slots of a cron, RRULE, interval or one-time rule, with DST notes."
    requires_system_checks: list[str] = []  # a pure preview: no models, no database

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.error = self._reject_arguments  # type: ignore[method-assign]
        return parser

    def _reject_arguments(self, message: str) -> NoReturn:
        """argparse prints usage over several lines; report one line and exit 2 instead."""
        error = CommandError(f"{message}; run with --help for usage", returncode=2)
        if not self._from_command_line():
            raise error
        self.stderr.write(f"CommandError: {error}")
        sys.exit(error.returncode)

    def _from_command_line(self) -> bool:
        return bool(getattr(self, "_called_from_command_line", False))

    def add_arguments(self, parser: CommandParser) -> None:
        rule = parser.add_mutually_exclusive_group(required=True)
        rule.add_argument("--cron", metavar="EXPR", help="five-field cron expression or @macro")
        rule.add_argument(
            "--rrule", metavar="RULE", help="RFC 5545 RRULE, e.g. FREQ=DAILY;BYHOUR=9"
        )
        rule.add_argument("--every", metavar="DURATION", help="fixed-rate interval: 90s, 15m, 6h")
        rule.add_argument(
            "--at", metavar="ISO", help="one time: with offset an instant, else local"
        )
        parser.add_argument(
            "--anchor",
            metavar="ISO",
            help="DTSTART of --rrule / grid origin of --every (default: --after)",
        )
        parser.add_argument("--tz", default="UTC", metavar="ZONE", help="IANA zone (default UTC)")
        parser.add_argument("--nonexistent", default="auto", choices=[c.value for c in Nonexistent])
        parser.add_argument("--ambiguous", default="auto", choices=[c.value for c in Ambiguous])
        parser.add_argument(
            "--after",
            metavar="ISO",
            help="instant with offset or Z; slots strictly after it (default now)",
        )
        parser.add_argument("--count", type=int, default=10, help=f"how many slots, 1..{MAX_COUNT}")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            after = _parse_after(options["after"])
            timing = _build(options, after)
            rows = _slots(timing, after, _check_count(options["count"]))
        except ScheduleValidationError as error:
            raise CommandError(_one_line(_option_message(error)), returncode=2) from None
        except ValueError as error:
            raise CommandError(_one_line(str(error)), returncode=2) from None
        except OverflowError:  # datetime arithmetic beyond year 1 or 9999
            raise CommandError(OUT_OF_RANGE, returncode=2) from None
        output = _as_json(timing, rows) if options["json"] else _as_table(timing, after, rows)
        self.stdout.write(output)


def _parse_after(text: str | None) -> datetime:
    if text is None:
        return django_timezone.now().replace(microsecond=0)
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"--after: {text[:60]!r} is not an ISO 8601 instant; e.g. 2026-03-28T00:00:00Z"
        ) from None
    if value.utcoffset() is None:
        raise ValueError(
            f"--after: {text[:60]!r} has no offset; add Z or one, e.g. {value.isoformat()}Z"
        )
    return value.astimezone(UTC)


def _check_count(count: Any) -> int:
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise ValueError(f"--count: must be a whole number from 1 to {MAX_COUNT}, got {count!r}")
    return count


def _build(options: dict[str, Any], after: datetime) -> Timing:
    chosen = [name for name in RULE_OPTIONS if options.get(name) is not None]
    if len(chosen) != 1:
        raise ValueError("give exactly one of --cron, --rrule, --every or --at")
    kind = {"cron": Kind.CRON, "rrule": Kind.RRULE, "every": Kind.INTERVAL, "at": Kind.ONCE}
    anchor = options["anchor"]
    if anchor is not None and chosen[0] not in ("rrule", "every"):
        raise ValueError(f"--anchor: only --rrule and --every take an anchor, not --{chosen[0]}")
    if anchor is None and chosen[0] in ("rrule", "every"):
        anchor = after
    return build_timing(
        kind=kind[chosen[0]],
        rule=options[chosen[0]],
        timezone=options["tz"],
        anchor=anchor,
        nonexistent=options["nonexistent"],
        ambiguous=options["ambiguous"],
    )


def _slots(timing: Timing, after: datetime, count: int) -> list[Row]:
    zone, ambiguous = timing.zone, timing.effective_dst.ambiguous
    return [
        (slot.astimezone(zone), _note(code, wall, slot.astimezone(zone), ambiguous))
        for slot, wall, code in islice(iter_annotated(timing, after), count)
    ]


def _note(code: str | None, wall: datetime, local: datetime, ambiguous: Ambiguous) -> str | None:
    """Say in words what DST did to the wall time ``wall`` that the rule asked for."""
    asked, landed = _clock(wall), _clock(local)
    if local.date() != wall.date():  # a gap across midnight, or a skipped day (Samoa 2011)
        asked, landed = f"{wall.date()} {asked}", f"{local.date()} {landed}"
    if code == GAP_SHIFT:
        return f"{asked} does not exist (DST gap): shifted to {landed}"
    if code == GAP_NEXT_VALID:
        return f"{asked} does not exist (DST gap): moved to {landed}, when the clock jumps"
    if code == FOLD_FIRST:
        kept = "" if ambiguous is Ambiguous.BOTH else "; the repeat is skipped"
        return f"{asked} happens twice: first of two{kept}"
    if code == FOLD_LAST:
        kept = "" if ambiguous is Ambiguous.BOTH else "; the first is skipped"
        return f"{asked} happens twice: second of two{kept}"
    return None


def _clock(value: datetime) -> str:
    return f"{value:%H:%M:%S}" if value.second else f"{value:%H:%M}"


def _utc_text(local: datetime) -> str:
    return local.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def _as_json(timing: Timing, rows: list[Row]) -> str:
    slots = [
        {"utc": _utc_text(local), "local": local.isoformat(timespec="seconds"), "note": note}
        for local, note in rows
    ]
    return json.dumps(
        {"description": describe(timing), "timezone": timing.zone.key, "slots": slots}, indent=2
    )


def _as_table(timing: Timing, after: datetime, rows: list[Row]) -> str:
    lines = [describe(timing), f"Slots after {_utc_text(after)}; {_policy_text(timing)}", ""]
    if not rows:
        return "\n".join([*lines, "No slots: the rule does not fire after that instant."])
    header = (f"Local ({timing.zone.key})", "UTC", "Note")
    cells = [(_local_text(local), _utc_text(local), note or "") for local, note in rows]
    widths = [max(len(row[i]) for row in [header, *cells]) for i in range(2)]
    for row in [header, *cells]:
        lines.append(f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]}".rstrip())
    return "\n".join(lines)


def _local_text(local: datetime) -> str:
    text = local.isoformat(sep=" ", timespec="seconds")  # pads the year, unlike strftime
    return f"{local:%a} {text[:19]} {text[19:]}"


def _policy_text(timing: Timing) -> str:
    rule = timing.rule
    if isinstance(rule, IntervalRule) or (
        isinstance(rule, OnceRule) and rule.at.tzinfo is not None
    ):
        return "absolute times (DST does not move them)"
    dst = timing.effective_dst
    return f"DST: nonexistent={dst.nonexistent.value}, ambiguous={dst.ambiguous.value}"


def _option_message(error: ScheduleValidationError) -> str:
    head, _, rest = error.field.partition(".")
    option = OPTION_OF_FIELD.get(head, head)
    return f"{option} ({rest}): {error.message}" if rest else f"{option}: {error.message}"


def _one_line(message: str) -> str:
    return " ".join(message.splitlines())
