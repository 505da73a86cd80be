"""One describer of preview rows, shared by ``schedule_preview`` and the admin's live preview.

A row is a slot in local time and in UTC with, when DST moved or doubled the wall time the
rule asked for, a sentence saying what happened ("03:30 does not exist (DST gap): moved to
04:00, when the clock jumps").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

from scheduler_app.errors import SearchExhausted
from scheduler_app.timing import Ambiguous, Timing, describe, iter_annotated
from scheduler_app.timing.calendars.solar import SolarRule, missing_days
from scheduler_app.timing.engine import holiday_skips
from scheduler_app.timing.rules import EARLIEST, LATEST, IntervalRule, OnceRule
from scheduler_app.timing.windows import ActiveWindows, WindowPolicy
from scheduler_app.timing.zones import FOLD_FIRST, FOLD_LAST, GAP_NEXT_VALID, GAP_SHIFT


@dataclass(frozen=True, kw_only=True)
class PreviewRow:
    local: datetime
    """The slot in the schedule's zone."""
    note: str | None
    """What DST did to the wall time the rule asked for, as a sentence; None: nothing."""

    @property
    def utc(self) -> datetime:
        return self.local.astimezone(UTC)

    def as_json(self) -> dict[str, str | None]:
        return {
            "utc": utc_text(self.local),
            "local": self.local.isoformat(timespec="seconds"),
            "note": self.note,
        }

    def as_display(self) -> dict[str, str | None]:
        """Texts for a page: weekday, date and time (seconds only when not zero), zone."""
        local, utc = self.local, self.utc
        return {
            "local": f"{local:%a} {local:%Y-%m-%d} {clock_text(local)} {local.tzname()}",
            "utc": f"{utc:%Y-%m-%d} {clock_text(utc)} UTC",
            "note": self.note,
        }


def preview_rows(timing: Timing, after: datetime, count: int) -> list[PreviewRow]:
    """The first ``count`` slots strictly after ``after``, each with its DST sentence; fewer
    when the search budget runs out first (``preview_slots`` says why)."""
    return preview_slots(timing, after, count).rows


@dataclass(frozen=True)
class PreviewSlots:
    rows: list[PreviewRow]
    stopped: str | None = None
    """Why the list ended before ``count`` rows: the search budget's message; None: it did not
    (or the rule has no more slots)."""


PREVIEW_BUDGETS = 2
"""A preview's list evaluates at most this many search budgets of candidates in all."""


def preview_slots(timing: Timing, after: datetime, count: int) -> PreviewSlots:
    """``preview_rows`` with why it stopped. Every slot is searched for under the timing's
    budget, the whole list under ``PREVIEW_BUDGETS`` of them (ten slots each near the budget
    cost ten budgets, seconds of a web worker, security review 8), and rows stop once a slot
    lies past ``after`` plus the budget's span (the first row excepted), so one preview does
    at most about two spans of work, whatever the rule."""
    zone, ambiguous = timing.zone, timing.effective_dst.ambiguous
    horizon = after + timing.budget.span if LATEST - after > timing.budget.span else LATEST
    ceiling = PREVIEW_BUDGETS * timing.budget.candidates
    rows: list[PreviewRow] = []
    try:
        for slot, wall, code in islice(iter_annotated(timing, after, ceiling=ceiling), count):
            local = slot.astimezone(zone)
            rows.append(PreviewRow(local=local, note=dst_note(code, wall, local, ambiguous)))
            if slot > horizon:
                break
    except SearchExhausted as exhausted:
        return PreviewSlots(rows, exhausted.message)
    return PreviewSlots(rows)


def dst_note(code: str | None, wall: datetime, local: datetime, ambiguous: Ambiguous) -> str | None:
    """Say in words what DST did to the wall time ``wall`` that the rule asked for."""
    asked, landed = clock_text(wall), clock_text(local)
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


def clock_text(value: datetime) -> str:
    """``HH:MM``, or ``HH:MM:SS`` when the seconds are not zero."""
    return f"{value:%H:%M:%S}" if value.second else f"{value:%H:%M}"


def utc_text(local: datetime) -> str:
    return local.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def policy_text(timing: Timing) -> str:
    """The DST policy in force, or that the rule is made of absolute times."""
    rule = timing.rule
    if isinstance(rule, IntervalRule) or (
        isinstance(rule, OnceRule) and rule.at.tzinfo is not None
    ):
        return "absolute times (DST does not move them)"
    if isinstance(rule, SolarRule):
        return "computed instants, one per local date (DST moves only the clock reading)"
    dst = timing.effective_dst
    return f"DST: nonexistent={dst.nonexistent.value}, ambiguous={dst.ambiguous.value}"


def description(timing: Timing) -> str:
    """The rule in words with its active window, e.g. "At 08:00, Monday through Friday,
    Europe/Riga, only MON-FRI 08:00-18:00 (Europe/Riga), slots outside skipped"."""
    return describe(timing) + window_clause(timing)


def window_clause(timing: Timing) -> str:
    """``", only <window> (<zone>), slots outside <what happens>"``, or "" without a window."""
    if timing.window is None:
        return ""
    outside = (
        "skipped" if timing.window.policy is WindowPolicy.SKIP else "deferred to the next opening"
    )
    return f", only {window_text(timing.window)} ({timing.zone.key}), slots outside {outside}"


def window_text(windows: ActiveWindows) -> str:
    """The windows as typed, days in capitals and times as HH:MM ("MON-FRI 08:00-18:00")."""
    parts = [part.split()[0].upper() for part in windows.source.split(";") if part.strip()]
    return "; ".join(
        f"{'every day' if days == '*' else days} {window.start:%H:%M}-{window.end:%H:%M}"
        for days, window in zip(parts, windows.windows, strict=True)
    )


NOTES_HORIZON = timedelta(days=366)
"""How far past ``after`` the notes look when no slot bounds them (a rule without slots)."""
MAX_NOTES = 50


def calendar_notes(timing: Timing, after: datetime, rows: list[PreviewRow]) -> list[str]:
    """What the calendar left out between ``after`` and the last row: public holidays
    ("skips Fri 2027-12-24: Christmas Eve (LV)") and days without a solar event
    ("2026-11-27 to 2027-01-15: no sunrise (polar night: the sun stays below the horizon)")."""
    until = rows[-1].utc if rows else min(after + NOTES_HORIZON, LATEST)
    if LATEST - after > timing.budget.span:  # the notes look no further than a search does
        until = min(until, after + timing.budget.span)
    notes = []
    if timing.holidays is not None:
        code = timing.holidays.code
        for slot, name in holiday_skips(timing, after, until, MAX_NOTES):
            local = slot.astimezone(timing.zone)
            notes.append(f"skips {local:%a} {local:%Y-%m-%d}: {name} ({code})")
    rule = timing.rule
    if isinstance(rule, SolarRule) and until > after:
        start, end = (value.astimezone(timing.zone).date() for value in (after, until))
        for first, last, reason in missing_days(rule, timing.zone, start, end)[:MAX_NOTES]:
            days = f"{first}" if first == last else f"{first} to {last}"
            notes.append(f"{days}: no {rule.event.value} ({reason})")
    return notes


FROM_EXAMPLE = "e.g. 2027-03-20 or 2027-03-20T08:00 (local), or 2027-03-20T06:00:00Z"


def parse_from(text: str, zone: ZoneInfo, option: str = "from") -> datetime:
    """The instant a preview starts at: a date (its midnight) or a date and time, read as a
    wall time in ``zone`` unless it carries an offset. Slots at or after it are shown, so
    callers pass ``parse_from(...) - TICK`` as ``after``. A ``ValueError`` says what to type.
    """
    cleaned = text.strip() if isinstance(text, str) else ""
    if not cleaned or len(cleaned) > 40 or not cleaned.isprintable():
        raise ValueError(f"{option}: a date or date and time is required, {FROM_EXAMPLE}")
    if cleaned.endswith(("Z", "z")):
        cleaned = cleaned[:-1] + "+00:00"
    try:
        value = datetime.fromisoformat(cleaned)
    except ValueError:
        raise ValueError(
            f"{option}: {text[:40]!r} is not a date or date and time, {FROM_EXAMPLE}"
        ) from None
    local = value if value.tzinfo is not None else value.replace(tzinfo=zone)
    try:
        instant = local.astimezone(UTC)
    except OverflowError:
        instant = None
    if instant is None or not EARLIEST <= instant <= LATEST - timedelta(days=366):
        raise ValueError(
            f"{option}: {text[:40]!r} is outside the years the scheduler computes in; "
            f"pick a date between {EARLIEST.year + 1} and {LATEST.year - 1}"
        )
    return instant
