"""The grammar of schedule phrases: clauses in any order, each at most once.

    phrase   := clause+
    clause   := every | days | monthly | date | times | count | window | zone | start | part
    every    := ("every" | "each") (N unit | Nth unit | "other" unit | unit | DURATION
                | days | date | ("first" | "last") weekday "of the month")
              | "hourly" | "daily" | "weekly" | "fortnightly" | "monthly" | "yearly" | "annually"
    unit     := minute | hour | day | week | fortnight | month | year (singular or plural)
    days     := ["on" | "from"] weekday-list | "weekdays" | "business days" | "weekends"
                | weekday ("to" | "through" | "-") weekday
    monthly  := ["on"] ["the"] (ordinal-list weekday | "last day" | day-list) ["of" the month]
              | "on day" N "of the month"
    date     := ["on"] (D month [YYYY] | month D [YYYY] | YYYY-MM-DD)   (no year: every year)
    times    := ["at"] time ("and" time)* | "at" ("half past" | "quarter past" | "quarter to"
                | N "minutes past" | "minute" N) ["the hour"] | "on the hour"
    count    := ("once" | "twice" | N "times") ("a" | "per") ("day" | "week" | "month")
    window   := ("between" | "from") time ("and" | "to" | "until" | "-") time | time "-" time
    part     := ["every"] ("morning" | "afternoon" | "evening")["s"] | "in the" part-word
                (a time without am/pm is read in that part of the day: "every evening at 7")
    zone     := ["in"] (IANA-name | "UTC" | abbreviation)
    start    := ("starting" | "beginning" | "from") date-or-ISO [time] ["UTC"]

A calendar phrase without a time runs at 00:00 in its zone (cron's ``0 0 ...``); a bare hour
("at 9") is refused naming both readings. Pure: no Django, no clock. Words it does not know are
refused, never skipped.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from scheduler_app.errors import InvalidRule
from scheduler_app.timing.durations import parse_duration
from scheduler_app.timing.phrases.clauses import (
    PART_WORDS,
    SHORTHAND,
    part_of_day,
    read_between,
    read_count,
    read_from,
    read_in,
    read_part_of_day,
    read_start,
    read_window,
    read_zone,
)
from scheduler_app.timing.phrases.clock import (
    MONTHS,
    read_date,
    read_past_the_hour,
    read_time,
    starts_time,
)
from scheduler_app.timing.phrases.draft import Draft
from scheduler_app.timing.phrases.monthly import read_month_part, starts_month_part
from scheduler_app.timing.phrases.words import (
    PhraseError,
    Reader,
    ordinal,
    read_number,
    read_weekdays,
    weekday,
)
from scheduler_app.timing.phrases.zone_words import is_zone_word

UNITS = {
    "minute": "minute", "minutes": "minute", "min": "minute", "mins": "minute",
    "hour": "hour", "hours": "hour", "hr": "hour", "hrs": "hour", "day": "day", "days": "day",
    "week": "week", "weeks": "week", "month": "month", "months": "month",
    "year": "year", "years": "year",
}  # fmt: skip
_UNCLEAR = {
    "biweekly": "it means every two weeks to some and twice a week to others; write "
    "'every 2 weeks on monday' or 'on monday and thursday'",
    "bi-weekly": "it means every two weeks to some and twice a week to others; write "
    "'every 2 weeks on monday' or 'on monday and thursday'",
    "bimonthly": "it means every two months to some and twice a month to others; write "
    "'every 2 months on the 1st' or 'on the 1st and 15th'",
    "quarterly": "say the months, e.g. 'every 3 months on the 1st at 9:00' (counted from the "
    "start) or one schedule per month",
}
EXAMPLE = "e.g. 'every weekday at 9:00 in Europe/Riga'"


def read_phrase(text: str) -> Draft:
    reader = Reader.of(text)
    if reader.done:
        raise PhraseError("text", f"the text is empty; describe the schedule, {EXAMPLE}")
    draft = Draft()
    while not reader.done:
        _read_clause(reader, draft)
    return draft


def _read_clause(reader: Reader, draft: Draft) -> None:
    word = reader.peek()
    start = reader.position
    if word in _UNCLEAR:
        raise reader.error(_UNCLEAR[word])
    handler = _CLAUSES.get(word)
    if handler is not None:
        handler(reader, draft, start)
        return
    if word in SHORTHAND:
        reader.take()
        _set_every(reader, draft, SHORTHAND[word], start)
        return
    if (word.isdigit() or word in ("three", "four", "five", "six")) and reader.peek(1) == "times":
        read_count(reader, draft, start)
        return
    if starts_month_part(reader):
        read_month_part(reader, draft, start)
        return
    if word in PART_WORDS:
        read_part_of_day(reader, draft, start)
        return
    if _read_days_or_date(reader, draft, start):
        return
    if is_zone_word(word, reader.peek(1)):
        read_zone(reader, draft, start)
        return
    if starts_time(word) and "-" in (reader.peek(1), reader.peek(2)):
        read_between(reader, draft, start)  # "every hour 9am-5pm", "9:00 - 17:00"
        return
    if starts_time(word):  # "9:00 every weekday", "noon on weekdays"
        _read_times(reader, draft, start)
        return
    raise reader.error(f"not a word of schedule phrases; {EXAMPLE}")


def _set_every(reader: Reader, draft: Draft, every: tuple[int, str], start: int) -> None:
    if every[0] == 0:
        raise reader.error("every 0 is never; give a number of at least 1", -2)
    draft.mark(reader, "every", start)
    draft.every = every


def _read_every(reader: Reader, draft: Draft, start: int) -> None:
    reader.take()
    word, after = reader.peek(), reader.peek(1)
    count = ordinal(word)
    if count is not None and _monthly_after_every(reader, count):
        read_month_part(reader, draft, start, every=True)
        return
    if count is not None and (after in UNITS or weekday(after) is not None):
        reader.take()
        if count < 2:
            raise reader.error("say e.g. 'every day' or 'every 2 days'", -1)
        _read_unit(reader, draft, count, start, other=word == "other")
        return
    if word in PART_WORDS:
        _set_every(reader, draft, (1, "day"), start)
        read_part_of_day(reader, draft, reader.position)
        return
    if (word in ("half", "quarter") and after == "hour") or (word, after) == ("half", "an"):
        reader.position += 3 if after == "an" else 2
        _set_every(reader, draft, (30 if word == "half" else 15, "minute"), start)
        return
    found = read_date(reader)
    if found is not None:
        if found.year is not None:
            raise reader.error("a date with a year happens once; leave out 'every'", -1)
        draft.mark(reader, "date", start)
        draft.on_date = found
        draft.every = (1, "year")
        return
    count = read_number(reader)
    if count is not None or reader.peek() in UNITS or reader.peek() == "fortnight":
        _read_unit(reader, draft, count, start, other=False)
        return
    days = read_weekdays(reader)
    if days is not None:
        draft.mark(reader, "days", start)
        draft.days = days
        return
    if starts_month_part(reader):
        read_month_part(reader, draft, start, every=True)
        return
    _read_every_duration(reader, draft, start)


def _monthly_after_every(reader: Reader, count: int) -> bool:
    """ "every first monday", "every last day of the month": a day of each month."""
    after = reader.peek(1)
    if after == "weekday":
        return True
    if after == "day" or (after == "of" and reader.peek(2) not in MONTHS):
        return count in (1, -1)  # "every last day", "every 1st of the month"
    return weekday(after) is not None and (count in (1, -1) or reader.peek(2) == "of")


def _read_unit(reader: Reader, draft: Draft, count: int | None, start: int, *, other: bool) -> None:
    word = reader.peek()
    if word in ("fortnight", "fortnights"):
        reader.take()
        _set_every(reader, draft, (2 * (count or 1), "week"), start)
        return
    if word in ("second", "seconds", "sec", "secs") and count:
        reader.take()
        draft.mark(reader, "every", start)
        draft.every_duration = timedelta(seconds=count)
        return
    if count is not None and weekday(word) is not None:
        if not other:
            raise reader.error(
                f"every {reader.peek(-1)} {word} can mean every {count} weeks or the "
                f"{reader.peek(-1)} {word} of each month; write 'every {count} weeks on "
                f"{word}' or 'the {reader.peek(-1)} {word} of every month'", -1
            )  # fmt: skip
        days = read_weekdays(reader)
        _set_every(reader, draft, (2, "week"), start)
        draft.days = days
        return
    unit = UNITS.get(word)
    if unit is None:
        raise reader.error("say minutes, hours, days, weeks or months, e.g. 'every 15 minutes'")
    reader.take()
    _set_every(reader, draft, (count if count is not None else 1, unit), start)


def _read_every_duration(reader: Reader, draft: Draft, start: int) -> None:
    word = reader.peek()
    duration = None
    if word[:1].isdigit():
        try:
            duration = parse_duration(word, "every")
        except InvalidRule:
            duration = None
    if duration is None:
        raise reader.error("say what repeats, e.g. 'every 15 minutes' or 'every weekday'")
    reader.take()
    if reader.peek() == "fixed" and reader.peek(1) == "rate":
        reader.position += 2
    draft.mark(reader, "every", start)
    draft.every_duration = duration


def _read_on(reader: Reader, draft: Draft, start: int) -> None:
    reader.take()
    if reader.accept_words("the", "hour"):
        draft.mark(reader, "minute of the hour", start)
        draft.minute_of_hour = 0
        return
    if starts_month_part(reader) or reader.peek() == "day":
        read_month_part(reader, draft, start)
        return
    if not _read_days_or_date(reader, draft, start):
        raise reader.error("say a weekday, a date or 'the first monday of the month' after 'on'")


def _read_days_or_date(reader: Reader, draft: Draft, start: int) -> bool:
    days = read_weekdays(reader)
    if days is not None:
        draft.mark(reader, "days", start)
        draft.days = days
        return True
    found = read_date(reader)
    if found is not None:
        draft.mark(reader, "date", start)
        draft.on_date = found
        return True
    return False


def _read_at(reader: Reader, draft: Draft, start: int) -> None:
    reader.take()
    if reader.accept_words("the", "top", "of", "the", "hour") or reader.accept_words(
        "the", "top", "of", "every", "hour"
    ):
        draft.mark(reader, "minute of the hour", start)
        draft.minute_of_hour = 0
        return
    minute = read_past_the_hour(reader)
    if minute is not None:
        if reader.peek() in ("of", "past") and reader.peek(1) in ("every", "each"):
            reader.position += 1
        if reader.peek() in ("every", "each") and reader.peek(1) == "hour":
            reader.position += 2
        draft.mark(reader, "minute of the hour", start)
        draft.minute_of_hour = minute
        return
    found = read_date(reader)
    if found is not None:
        draft.mark(reader, "date", start)
        draft.on_date = found
    _read_times(reader, draft, start)


def _read_times(reader: Reader, draft: Draft, start: int) -> None:
    part = part_of_day(reader.words)
    times = [read_time(reader, part)]
    while (reader.peek() == "and" and starts_time(reader.peek(1))) or starts_time(reader.peek()):
        reader.accept("and")
        times.append(read_time(reader, part))
    if reader.peek() == "local" and reader.peek(1) == "time":
        reader.position += 2  # "Once at 2027-09-05 14:00:00 local time": the zone's wall time
    draft.mark(reader, "at", start)
    draft.times = tuple(times)


def _read_noise(reader: Reader, draft: Draft, start: int) -> None:
    reader.take()  # "and" between clauses: "every monday at 9:00 and in Europe/Riga"


_CLAUSES: dict[str, Any] = {
    "every": _read_every,
    "each": _read_every,
    "on": _read_on,
    "at": _read_at,
    "once": read_count,
    "twice": read_count,
    "thrice": read_count,
    "between": read_window,
    "from": read_from,
    "in": read_in,
    "starting": read_start,
    "beginning": read_start,
    "and": _read_noise,
    "only": _read_noise,
}
for _word in ("one", "two"):
    _CLAUSES[_word] = read_count
