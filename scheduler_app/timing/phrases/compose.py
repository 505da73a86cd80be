"""From what a phrase said (a ``Draft``) to the structured rule the service stores: a cron
expression, an RRULE with its anchor, an interval or one local date-time, plus the zone and
the active window. Pure: no Django, no clock."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from scheduler_app.errors import UnknownTimezone
from scheduler_app.timing.phrases.grammar import Draft, read_phrase
from scheduler_app.timing.phrases.words import (
    CRON_DAYS,
    WEEKDAY_CODES,
    WEEKDAYS,
    WEEKEND,
    PhraseError,
    clock_text,
    refuse,
)
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
    kind, rule, anchor = _rule(text, draft)
    if anchor is not None and anchor.tzinfo is None:
        anchor = anchor.replace(tzinfo=get_zone(zone))  # a wall time in the schedule's zone
    window = _window(text, draft)
    return ParsedText(
        text=text.strip(),
        kind=kind,
        rule=rule,
        timezone=zone,
        anchor=anchor,
        active_window=window,
        window_policy="skip" if window else "",
    )


def _rule(text: str, draft: Draft) -> tuple[str, str, datetime | None]:
    if draft.on_date is not None or draft.once:
        return _once(text, draft)
    if draft.monthly is not None:
        return _monthly(text, draft, draft.monthly)
    if draft.every_duration is not None or (draft.every and draft.every[1] in ("minute", "hour")):
        return _sub_daily(text, draft)
    if draft.minute_of_hour is not None:
        return "cron", f"{draft.minute_of_hour} * * * {_cron_days(draft.days)}", None
    return _calendar(text, draft)


def _once(text: str, draft: Draft) -> tuple[str, str, datetime | None]:
    others = _given(
        draft, "every", "days", "day of the month", "between", "start", "how many times a day"
    )
    if others:
        raise refuse(text, others, "a date runs once; leave out the repetition or the date")
    times = draft.times or ()
    if draft.on_date is None or len(times) != 1:
        raise refuse(
            text, draft.given.get("at", text), "say one date and one time, "
            "e.g. 'on 5 September 2027 at 14:00'"
        )  # fmt: skip
    at = datetime.combine(draft.on_date, datetime.min.time()).replace(
        hour=times[0][0], minute=times[0][1], second=times[0][2]
    )
    return "once", at.isoformat(), None


def _monthly(
    text: str, draft: Draft, monthly: tuple[str, int, int]
) -> tuple[str, str, datetime | None]:
    clash = _given(draft, "days", "every")
    if clash:
        raise refuse(text, clash, "a day of the month already says when; leave this out")
    hours, minutes = _grid(text, draft)
    how, number, day = monthly
    if how == "day":
        return "cron", f"{_join(minutes)} {_join(hours)} {number} * *", None
    at = f"BYHOUR={_join(hours)};BYMINUTE={_join(minutes)};BYSECOND=0"
    if how == "last_day":
        return "rrule", f"FREQ=MONTHLY;BYMONTHDAY=-1;{at}", draft.start
    return "rrule", f"FREQ=MONTHLY;BYDAY={number}{WEEKDAY_CODES[day]};{at}", draft.start


def _sub_daily(text: str, draft: Draft) -> tuple[str, str, datetime | None]:
    if draft.per_day is not None:
        raise refuse(
            text, draft.given["how many times a day"], "a rule every few minutes or hours "
            "already says how often; leave out how many times a day"
        )  # fmt: skip
    if draft.times is not None:
        raise refuse(
            text, draft.given["at"], "a rule every few minutes or hours runs all day; "
            "limit it with 'between 8:00 and 18:00' instead"
        )  # fmt: skip
    if draft.every_duration is not None:
        seconds = int(draft.every_duration.total_seconds())
    else:
        count, unit = draft.every or (1, "minute")
        seconds = count * (60 if unit == "minute" else 3600)
    days = _cron_days(draft.days)
    if seconds < 3600 and seconds % 60 == 0 and 3600 % seconds == 0:
        step = seconds // 60
        return "cron", f"{'*' if step == 1 else f'*/{step}'} * * * {days}", None
    if seconds % 3600 == 0 and 86400 % seconds == 0:
        step = seconds // 3600
        return "cron", f"0 {'*' if step == 1 else f'*/{step}'} * * {days}", None
    if draft.days is not None and draft.window is None:
        raise refuse(
            text, draft.given["days"], "an interval off the clock's grid cannot be limited to "
            "days by itself; add 'between 0:00 and 23:59' or use a step that divides the hour"
        )  # fmt: skip
    return "interval", str(seconds), draft.start


def _calendar(text: str, draft: Draft) -> tuple[str, str, datetime | None]:
    every = draft.every or (1, "day")
    if draft.times is None:
        raise refuse(text, text, "say at what time, e.g. 'every weekday at 9:00'")
    hours, minutes = _grid(text, draft)
    at = f"BYHOUR={_join(hours)};BYMINUTE={_join(minutes)};BYSECOND=0"
    count, unit = every
    if unit == "week" and draft.days is None:
        raise refuse(text, draft.given["every"], "say which day, e.g. 'every week on monday'")
    if unit == "day" and count > 1:
        if draft.days is not None:
            raise refuse(text, draft.given["days"], "every N days cannot also name weekdays")
        return "rrule", f"FREQ=DAILY;INTERVAL={count};{at}", draft.start
    if unit == "week" and count > 1:
        byday = ",".join(WEEKDAY_CODES[d] for d in sorted(draft.days or ()))
        return "rrule", f"FREQ=WEEKLY;INTERVAL={count};BYDAY={byday};{at};WKST=MO", draft.start
    if draft.start is not None:
        raise refuse(text, draft.given["start"], "only 'every N days/weeks' counts from a start")
    return "cron", f"{_join(minutes)} {_join(hours)} * * {_cron_days(draft.days)}", None


def _grid(text: str, draft: Draft) -> tuple[list[int], list[int]]:
    """Hours and minutes whose every combination is exactly the times said."""
    times = draft.times
    if not times:
        raise refuse(text, text, "say at what time, e.g. 'at 9:00'")
    if any(second for _, _, second in times):
        raise refuse(text, draft.given["at"], "a repeating rule runs on whole minutes")
    if draft.per_day is not None and draft.per_day != len(set(times)):
        said = " and ".join(clock_text(t) for t in times)
        raise refuse(
            text, draft.given["how many times a day"], f"it says {draft.per_day} a day but "
            f"gives {len(set(times))} time(s): {said}"
        )  # fmt: skip
    hours = sorted({h for h, _, _ in times})
    minutes = sorted({m for _, m, _ in times})
    if len(hours) * len(minutes) != len(set(times)):
        said = " and ".join(clock_text(t) for t in times)
        raise refuse(
            text, draft.given["at"], f"{said} cannot be one rule: a rule runs at every "
            "combination of its hours and minutes; use times that share their minutes "
            "(9:00 and 17:00) or two schedules"
        )  # fmt: skip
    return hours, minutes


def _window(text: str, draft: Draft) -> str:
    if draft.window is None:
        return ""
    opens, closes = draft.window
    if draft.on_date is not None:
        raise refuse(text, draft.given["between"], "a one-time date has no active window")
    return f"{_window_days(draft.days)} {clock_text(opens)}-{clock_text(closes)}"


def _window_days(days: frozenset[int] | None) -> str:
    cron = _cron_days(days)
    return "MON-SUN" if cron == "*" else cron


def _cron_days(days: frozenset[int] | None) -> str:
    if days is None or len(days) == 7:
        return "*"
    if days == WEEKDAYS:
        return "MON-FRI"
    if days == WEEKEND:
        return "SAT,SUN"
    return ",".join(CRON_DAYS[d] for d in sorted(days))


def _join(values: list[int]) -> str:
    return ",".join(str(v) for v in values)


def _given(draft: Draft, *clauses: str) -> str:
    return next((draft.given[c] for c in clauses if c in draft.given), "")
