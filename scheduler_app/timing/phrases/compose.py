"""From what a phrase said (a ``Draft``) to the structured rule the service stores: a cron
expression, an RRULE with its anchor, an interval or one local date-time, plus the zone and
the active window. Pure: no Django, no clock."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from scheduler_app.errors import UnknownTimezone
from scheduler_app.timing.phrases.calendar_rules import calendar_rule, monthly_rule, yearly_rule
from scheduler_app.timing.phrases.daily import Built, NotOneRule, cron_days, window_steps
from scheduler_app.timing.phrases.draft import Draft
from scheduler_app.timing.phrases.grammar import read_phrase
from scheduler_app.timing.phrases.words import PhraseError, refuse
from scheduler_app.timing.zones import get_zone


@dataclass(frozen=True, kw_only=True)
class ParsedText:
    """The structured rule a phrase means. Only this is stored, never the text."""

    text: str
    kind: str
    rule: str
    timezone: str
    anchor: datetime | None = None
    """DTSTART of an RRULE / grid origin of an interval (None: the service takes now)."""
    active_window: str = ""
    window_policy: str = ""

    def as_fields(self) -> dict[str, Any]:
        """The schedule fields it sets (``create_schedule``'s names)."""
        fields: dict[str, Any] = {"kind": self.kind, "rule": self.rule, "timezone": self.timezone}
        if self.anchor is not None:
            fields["anchor"] = self.anchor
        if self.active_window:
            fields["active_window"] = self.active_window
            fields["window_policy"] = self.window_policy
        return fields

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "text": self.text,
            "kind": self.kind,
            "rule": self.rule,
            "timezone": self.timezone,
            "anchor": self.anchor.isoformat() if self.anchor is not None else None,
        }
        if self.active_window:
            data["window"] = self.active_window
            data["window_policy"] = self.window_policy
        return data


MAX_TEXT_LENGTH = 500


def parse_text(text: str, *, timezone: str = "UTC") -> ParsedText:
    """The structured rule of an English schedule phrase; ``PhraseError`` names the part it
    could not read. ``timezone`` applies when the text names no zone ("in Europe/Riga")."""
    if not isinstance(text, str):
        raise PhraseError("text", f"expected a phrase string, got {type(text).__name__}")
    if len(text) > MAX_TEXT_LENGTH:
        raise PhraseError("text", f"the text is longer than {MAX_TEXT_LENGTH} characters")
    if not text.isprintable():
        raise PhraseError("text", "the text contains control characters; write one line")
    draft = read_phrase(text)
    zone = draft.zone or timezone
    if draft.zone is not None:
        try:
            get_zone(draft.zone, "text")
        except UnknownTimezone:
            raise refuse(
                text, draft.zone, "not an IANA time zone; say e.g. 'in Europe/Riga' or 'in UTC'"
            ) from None
    try:
        built = _rule(text, draft)
    except NotOneRule as error:
        raise refuse(text, draft.given.get("every", text), str(error)) from None
    anchor = built.anchor
    if anchor is not None and anchor.tzinfo is None:
        anchor = anchor.replace(tzinfo=get_zone(zone))  # a wall time in the schedule's zone
    return ParsedText(
        text=text.strip(),
        kind=built.kind,
        rule=built.rule,
        timezone=zone,
        anchor=anchor,
        active_window=built.window,
        window_policy="skip" if built.window else "",
    )


def _rule(text: str, draft: Draft) -> Built:
    if draft.part is not None and draft.times is None:
        raise refuse(
            text, draft.given["part of the day"], f"say at what time in the {draft.part}, "
            f"e.g. 'every {draft.part} at {_PART_EXAMPLE[draft.part]}'"
        )  # fmt: skip
    if draft.window is not None and not _sub_daily(draft):
        raise refuse(
            text, draft.given["between"], "a window limits a step, e.g. 'every 15 minutes "
            "between 8:00 and 18:00'; with times of day leave it out"
        )  # fmt: skip
    if draft.on_date is not None and draft.on_date.year is None:
        return yearly_rule(text, draft, draft.on_date)
    if draft.on_date is not None or draft.once:
        return _once(text, draft)
    if draft.nth is not None or draft.month_days is not None:
        return monthly_rule(text, draft)
    unit = draft.every[1] if draft.every else ""
    if unit in ("month", "year"):
        example = "'every month on the 1st at 9:00'" if unit == "month" else (
            "'every year on 1 January at 9:00'"
        )  # fmt: skip
        raise refuse(text, draft.given["every"], f"say which day, e.g. {example}")
    if _sub_daily(draft):
        return _sub_daily_rule(text, draft)
    return calendar_rule(text, draft)


_PART_EXAMPLE = {"morning": "7:30", "afternoon": "3pm", "evening": "7pm"}


def _sub_daily(draft: Draft) -> bool:
    unit = draft.every[1] if draft.every else ""
    return draft.every_duration is not None or unit in ("minute", "hour") or (
        draft.minute_of_hour is not None
    )  # fmt: skip


def _once(text: str, draft: Draft) -> Built:
    others = _given(draft, "every", "days", "day of the month", "start", "how many times")
    if others:
        raise refuse(text, others, "a date runs once; leave out the repetition or the date")
    times = draft.times or ()
    if draft.on_date is None or len(times) != 1:
        raise refuse(
            text, draft.given.get("at", text), "say one date and one time, "
            "e.g. 'on 5 September 2027 at 14:00'"
        )  # fmt: skip
    day = draft.on_date
    at = datetime(day.year or 1, day.month, day.day, *times[0])  # noqa: DTZ001 - wall time
    return Built("once", at.isoformat())


def _sub_daily_rule(text: str, draft: Draft) -> Built:
    if draft.per is not None:
        raise refuse(
            text, draft.given["how many times"], "a rule every few minutes or hours "
            "already says how often; leave out how many times a day"
        )  # fmt: skip
    if draft.times is not None:
        raise refuse(
            text, draft.given["at"], "a rule every few minutes or hours runs all day; "
            "limit it with a window instead, e.g. 'every 15 minutes between 8:00 and 18:00'"
        )  # fmt: skip
    plain = draft.window is None and draft.minute_of_hour is None and draft.days is None
    if draft.start is not None and not plain:
        raise refuse(
            text, draft.given["start"], "only a plain step counts from a start, e.g. 'every "
            "6 hours starting 4 January 2027 at 1:00'; leave out the start"
        )  # fmt: skip
    if draft.minute_of_hour is not None:
        return _past_the_hour(text, draft, draft.minute_of_hour)
    if draft.every_duration is not None:
        seconds = int(draft.every_duration.total_seconds())
    else:
        count, unit = draft.every or (1, "minute")
        seconds = count * (60 if unit == "minute" else 3600)
    days = cron_days(draft.days)
    if draft.start is not None:  # counted from the start, not from the clock's grid
        return Built("interval", str(seconds), draft.start)
    if draft.window is not None and seconds % 60 == 0:
        return window_steps(*draft.window, seconds // 60, draft.days)
    if draft.window is None and seconds < 3600 and seconds % 60 == 0 and 3600 % seconds == 0:
        step = seconds // 60
        return Built("cron", f"{'*' if step == 1 else f'*/{step}'} * * * {days}")
    if draft.window is None and seconds % 3600 == 0 and 86400 % seconds == 0 and seconds < 86400:
        step = seconds // 3600
        return Built("cron", f"0 {'*' if step == 1 else f'*/{step}'} * * {days}")
    if draft.days is not None and draft.window is None:
        raise refuse(
            text, draft.given["days"], "an interval off the clock's grid cannot be limited to "
            "days by itself; add 'between 0:00 and 23:59' or use a step that divides the hour"
        )  # fmt: skip
    window = ""
    if draft.window is not None:  # seconds: an absolute grid, the window (end excluded) skips
        opens, closes = draft.window
        window = (
            f"{_window_days(draft)} {opens[0]:02d}:{opens[1]:02d}-{closes[0]:02d}:{closes[1]:02d}"
        )
    return Built("interval", str(seconds), draft.start, window)


def _past_the_hour(text: str, draft: Draft, minute: int) -> Built:
    count, unit = draft.every or (1, "hour")
    if unit != "hour":
        raise refuse(
            text, draft.given["minute of the hour"], "a minute of the hour goes with 'every "
            "hour' or 'every 2 hours', e.g. 'every hour at half past'"
        )  # fmt: skip
    if draft.window is not None:
        return window_steps(*draft.window, count * 60, draft.days, minute)
    if 24 % count:
        raise refuse(
            text, draft.given["every"], "every few hours at a minute of the hour must divide "
            "the day (1, 2, 3, 4, 6, 8 or 12 hours) or have a window, e.g. 'between 8:00 and "
            "20:00'"
        )  # fmt: skip
    hours = "*" if count == 1 else f"*/{count}"
    return Built("cron", f"{minute} {hours} * * {cron_days(draft.days)}")


def _window_days(draft: Draft) -> str:
    cron = cron_days(draft.days)
    return "MON-SUN" if cron == "*" else cron


def _given(draft: Draft, *clauses: str) -> str:
    return next((draft.given[c] for c in clauses if c in draft.given), "")
