"""Phrases with times of day to rules: days of the week, days of the month, dates of every
year, every N days/weeks/months. Pure: no Django, no clock."""

from __future__ import annotations

from scheduler_app.timing.phrases.clock import DateWords, Time, clock_text
from scheduler_app.timing.phrases.daily import Built, cron_days, cron_list, times_rule
from scheduler_app.timing.phrases.draft import Draft
from scheduler_app.timing.phrases.monthly import ANY_WEEKDAY
from scheduler_app.timing.phrases.words import WEEKDAY_CODES, refuse

_WORKDAYS = "MO,TU,WE,TH,FR"
MIDNIGHT: Time = (0, 0, 0)
EXAMPLE = "e.g. 'every weekday at 9:00' or 'every month on the 1st'"


def calendar_rule(text: str, draft: Draft) -> Built:
    count, unit = draft.every or (1, "day")
    if draft.times is None and draft.every is None and draft.days is None and draft.per is None:
        raise refuse(text, text, f"say when it runs, {EXAMPLE}")
    if unit == "week" and draft.days is None:
        raise refuse(
            text, draft.given["every"], "say which day, e.g. 'every week on monday' (at "
            "00:00) or 'every week on monday at 9:00'"
        )  # fmt: skip
    times = _times_or_midnight(text, draft)
    _check_count(text, draft)
    if unit == "day" and count > 1:
        if draft.days is not None:
            raise refuse(text, draft.given["days"], "every N days cannot also name weekdays")
        return Built("rrule", f"FREQ=DAILY;INTERVAL={count};{_at(text, draft)}", draft.start)
    if unit == "week" and count > 1:
        byday = ",".join(WEEKDAY_CODES[d] for d in sorted(draft.days or ()))
        at = _at(text, draft)
        return Built(
            "rrule", f"FREQ=WEEKLY;INTERVAL={count};BYDAY={byday};{at};WKST=MO", draft.start
        )
    if draft.start is not None:
        raise refuse(text, draft.given["start"], "only 'every N days/weeks' counts from a start")
    _whole_minutes(text, draft)
    return times_rule(times, draft.days)


def monthly_rule(text: str, draft: Draft) -> Built:
    clash = draft.given.get("days")
    if clash:
        raise refuse(text, clash, "a day of the month already says when; leave this out")
    count, unit = draft.every or (1, "month")
    if unit != "month":
        raise refuse(
            text, draft.given["every"], "a day of the month repeats every month; say 'every "
            "month' or 'every 3 months'"
        )  # fmt: skip
    times = _times_or_midnight(text, draft)
    _check_count(text, draft)
    every = f";INTERVAL={count}" if count > 1 else ""
    if draft.nth is not None:
        return _nth_rule(text, draft, every)
    days = draft.month_days or ()
    if count == 1 and min(days) > 0:
        if draft.start is not None:
            raise refuse(text, draft.given["start"], "only 'every N months' counts from a start")
        _whole_minutes(text, draft)
        return times_rule(times, None, cron_list(sorted(set(days))))
    bymonthday = ",".join(str(d) for d in sorted(set(days), key=lambda d: (d < 0, d)))
    return Built(
        "rrule", f"FREQ=MONTHLY{every};BYMONTHDAY={bymonthday};{_at(text, draft)}", draft.start
    )


def _nth_rule(text: str, draft: Draft, every: str) -> Built:
    nth = draft.nth or ()
    at = _at(text, draft)
    if any(day == ANY_WEEKDAY for _, day in nth):
        if len(nth) > 1 or len(draft.times or ()) > 1:
            raise refuse(
                text, draft.given["day of the month"], "'the first weekday of the month' "
                "goes with one time and no other day; make more schedules for more"
            )  # fmt: skip
        position = nth[0][0]
        rule = f"FREQ=MONTHLY{every};BYDAY={_WORKDAYS};BYSETPOS={position};{at}"
        return Built("rrule", rule, draft.start)
    byday = ",".join(f"{n}{WEEKDAY_CODES[day]}" for n, day in nth)
    return Built("rrule", f"FREQ=MONTHLY{every};BYDAY={byday};{at}", draft.start)


def yearly_rule(text: str, draft: Draft, day: DateWords) -> Built:
    if draft.every != (1, "year"):
        said = draft.given.get("every") or draft.given["date"]
        raise refuse(
            text, said, f"give the year for one date ('{day.day} {_MONTH_NAMES[day.month]} "
            f"2027') or say 'every year on {day.day} {_MONTH_NAMES[day.month]}'"
        )  # fmt: skip
    clash = draft.given.get("days") or draft.given.get("start") or draft.given.get(
        "how many times"
    )  # fmt: skip
    if clash:
        raise refuse(text, clash, "a date of every year already says when; leave this out")
    _times_or_midnight(text, draft)
    _whole_minutes(text, draft)
    hours, minutes = _grid(text, draft)
    return Built("cron", f"{minutes} {hours} {day.day} {day.month} *")


_MONTH_NAMES = (
    "", "January", "February", "March", "April", "May", "June", "July", "August",
    "September", "October", "November", "December",
)  # fmt: skip


def _times_or_midnight(text: str, draft: Draft) -> tuple[Time, ...]:
    """A calendar phrase without a time of day runs at 00:00 in its zone, as cron's
    ``0 0 ...`` and ``@daily`` do ("every month on the 1st"); the description says "at 00:00".
    Several times a day must be named, though: the parser never invents them."""
    if draft.times is not None:
        return draft.times
    count, unit = draft.per or (1, "")
    if unit == "day" and count != 1:
        raise refuse(
            text, draft.given["how many times"], f"say the {count} times, e.g. "
            "'twice a day at 9:00 and 17:00'"
        )  # fmt: skip
    draft.times = (MIDNIGHT,)
    return draft.times


def _check_count(text: str, draft: Draft) -> None:
    """ "twice a day at 9:00 and 17:00", "once a week on monday": the count must match."""
    if draft.per is None:
        return
    count, unit = draft.per
    listed = {
        "day": len(set(draft.times or ())),
        "week": len(draft.days or ()),
        "month": len(draft.month_days or draft.nth or ()),
    }[unit]
    if unit == "week" and draft.every not in (None, (1, "week")):
        listed = -1
    if count != listed:
        raise refuse(
            text, draft.given["how many times"], f"it says {count} a {unit} but gives "
            f"{max(listed, 0)} {'time(s)' if unit == 'day' else 'day(s)'}; say them all, e.g. "
            "'twice a day at 9:00 and 17:00' or 'twice a week on monday and thursday at 9:00'"
        )  # fmt: skip


def _whole_minutes(text: str, draft: Draft) -> None:
    if any(second for _, _, second in draft.times or ()):
        raise refuse(text, draft.given["at"], "a repeating rule runs on whole minutes")


def _at(text: str, draft: Draft) -> str:
    hours, minutes = _grid(text, draft)
    return f"BYHOUR={hours};BYMINUTE={minutes};BYSECOND=0"


def _grid(text: str, draft: Draft) -> tuple[str, str]:
    """Hours and minutes whose every combination is exactly the times said."""
    times = draft.times or ()
    _whole_minutes(text, draft)
    hours = sorted({h for h, _, _ in times})
    minutes = sorted({m for _, m, _ in times})
    if len(hours) * len(minutes) != len(set(times)):
        said = " and ".join(clock_text(t) for t in times)
        raise refuse(
            text, draft.given["at"], f"{said} cannot be one rule on these days: a rule runs at "
            "every combination of its hours and minutes; use times that share their minutes "
            "(9:00 and 17:00) or two schedules"
        )  # fmt: skip
    return ",".join(map(str, hours)), ",".join(map(str, minutes))


__all__ = ["calendar_rule", "cron_days", "monthly_rule", "yearly_rule"]
