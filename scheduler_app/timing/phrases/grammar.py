"""The grammar of schedule phrases: clauses in any order, each at most once.

    phrase   := clause+
    clause   := every | days | monthly | date | times | count | window | zone | start
    every    := "every" (N unit | "other" unit | unit | DURATION ["fixed rate"] | days)
              | "daily" | "hourly" | "weekly"
    unit     := minute(s) | hour(s) | day(s) | week(s)
    days     := ["on" | "every"] weekday-list | "weekday(s)" | "weekend(s)"
                | weekday ("to" | "through" | "-") weekday
    monthly  := ["on"] "the" (ordinal weekday | "last day" | Nth) "of" ("the" | "every") "month"
              | "on day" N "of the month"
    date     := ["on"] (D month YYYY | month D YYYY | YYYY-MM-DD)
    times    := "at" time ("and" time)* | "at minute" N ("of" | "past") "every hour"
    count    := ("once" | "twice" | N "times") ("a" | "per") "day"
    window   := "between" time "and" time
    zone     := ["in"] IANA-name
    start    := ("from" | "starting") date-or-ISO [time] ["UTC"]

Pure: no Django, no clock. Words it does not know are refused, never skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from scheduler_app.errors import InvalidRule
from scheduler_app.timing.durations import parse_duration
from scheduler_app.timing.phrases.words import (
    ORDINALS,
    PhraseError,
    Reader,
    read_date,
    read_day_of_month,
    read_number,
    read_time,
    read_weekdays,
    refuse,
    starts_time,
    weekday,
)

UNITS = {
    "minute": "minute", "minutes": "minute", "min": "minute", "mins": "minute",
    "hour": "hour", "hours": "hour", "day": "day", "days": "day",
    "week": "week", "weeks": "week",
}  # fmt: skip
Time = tuple[int, int, int]


@dataclass
class Draft:
    """What a phrase said, clause by clause (None: that clause was not given)."""

    every: tuple[int, str] | None = None
    every_duration: timedelta | None = None
    days: frozenset[int] | None = None
    monthly: tuple[str, int, int] | None = None
    """("nth", n, weekday) | ("last_day", 0, 0) | ("day", day_of_month, 0)"""
    on_date: date | None = None
    once: bool = False
    times: tuple[Time, ...] | None = None
    minute_of_hour: int | None = None
    per_day: int | None = None
    window: tuple[Time, Time] | None = None
    zone: str | None = None
    start: datetime | None = None
    given: dict[str, str] = field(default_factory=dict)

    def mark(self, reader: Reader, clause: str, start: int) -> None:
        """Note the words of a clause; refuse one said twice ("at 9:00 ... at 10:00"): the
        parser does not pick one."""
        words = " ".join(reader.words[start : reader.position])
        if clause in self.given:
            raise refuse(
                reader.text,
                words,
                f"{clause} is already given by {self.given[clause]!r}; say it once",
            )
        self.given[clause] = words


def read_phrase(text: str) -> Draft:
    reader = Reader.of(text)
    if reader.done:
        raise PhraseError("text", f"the text is empty; describe the schedule, {_EXAMPLE}")
    draft = Draft()
    while not reader.done:
        _read_clause(reader, draft)
    return draft


_EXAMPLE = "e.g. 'every weekday at 9:00 in Europe/Riga'"


def _read_clause(reader: Reader, draft: Draft) -> None:
    word = reader.peek()
    start = reader.position
    handler = _CLAUSES.get(word)
    if handler is not None:
        handler(reader, draft, start)
        return
    if word.isdigit() and reader.peek(1) == "times":
        _read_count(reader, draft, start)
        return
    if _read_days_or_date(reader, draft, start):
        return
    if "/" in word or word == "utc":
        _read_zone(reader, draft, start)
        return
    raise reader.error(f"not a word of schedule phrases; {_EXAMPLE}")


def _read_every(reader: Reader, draft: Draft, start: int) -> None:
    reader.take()
    count = 2 if reader.accept("other") else read_number(reader)  # "every other week"
    word = reader.peek()
    if count is not None or word in UNITS:
        unit = UNITS.get(reader.peek())
        if unit is None:
            raise reader.error("say minutes, hours, days or weeks, e.g. 'every 15 minutes'")
        if count == 0:
            raise reader.error("every 0 is never; give a number of at least 1", -1)
        reader.take()
        draft.mark(reader, "every", start)
        draft.every = (count or 1, unit)
        return
    if word == "month":
        raise reader.error("say which day of the month, e.g. 'on the first monday of the month'")
    days = read_weekdays(reader)
    if days is not None:
        _set_days(reader, draft, days, start)
        return
    duration = _duration(word)
    if duration is None:
        raise reader.error("say what repeats, e.g. 'every 15 minutes' or 'every weekday'")
    reader.take()
    if reader.peek() == "fixed" and reader.peek(1) == "rate":
        reader.position += 2
    draft.mark(reader, "every", start)
    draft.every_duration = duration


def _duration(word: str) -> timedelta | None:
    if not word[:1].isdigit():
        return None
    try:
        return parse_duration(word, "every")
    except InvalidRule:
        return None


def _read_shorthand(reader: Reader, draft: Draft, start: int) -> None:
    word = reader.take()
    draft.mark(reader, "every", start)
    draft.every = (1, {"daily": "day", "hourly": "hour", "weekly": "week"}[word])


def _set_days(reader: Reader, draft: Draft, days: frozenset[int], start: int) -> None:
    draft.mark(reader, "days", start)
    draft.days = days


def _read_on(reader: Reader, draft: Draft, start: int) -> None:
    reader.take()
    if reader.peek() == "day" and reader.peek(1)[:1].isdigit():
        reader.take()
        day = read_day_of_month(reader)
        _of_the_month(reader)
        _set_monthly(reader, draft, ("day", day or 1, 0), start)
        return
    if not _read_days_or_date(reader, draft, start):
        raise reader.error("say a weekday, a date or 'the first monday of the month' after 'on'")


def _read_days_or_date(reader: Reader, draft: Draft, start: int) -> bool:
    if reader.peek() == "the":
        _read_monthly(reader, draft, start)
        return True
    days = read_weekdays(reader)
    if days is not None:
        _set_days(reader, draft, days, start)
        return True
    found = read_date(reader)
    if found is not None:
        draft.mark(reader, "date", start)
        draft.on_date = found
        return True
    return False


def _read_monthly(reader: Reader, draft: Draft, start: int) -> None:
    reader.expect("the", why="expected 'the'")
    word = reader.peek()
    if word == "last" and reader.peek(1) == "day":
        reader.position += 2
        _of_the_month(reader)
        _set_monthly(reader, draft, ("last_day", 0, 0), start)
        return
    if word in ORDINALS:
        reader.take()
        day = weekday(reader.peek())
        if day is None:
            raise reader.error("say a weekday, e.g. 'the first monday of the month'")
        reader.take()
        _of_the_month(reader)
        _set_monthly(reader, draft, ("nth", ORDINALS[word], day), start)
        return
    day_of_month = read_day_of_month(reader)
    if day_of_month is None:
        raise reader.error("say e.g. 'the first monday', 'the last day' or 'the 15th'")
    _of_the_month(reader)
    _set_monthly(reader, draft, ("day", day_of_month, 0), start)


def _of_the_month(reader: Reader) -> None:
    reader.expect("of", why="say which month: 'of the month' (every month)")
    reader.expect("the", "every", "each", why="say 'of the month' or 'of every month'")
    reader.expect("month", why="say 'of the month' (every month)")


def _set_monthly(reader: Reader, draft: Draft, monthly: tuple[str, int, int], start: int) -> None:
    draft.mark(reader, "day of the month", start)
    draft.monthly = monthly


def _read_at(reader: Reader, draft: Draft, start: int) -> None:
    reader.take()
    if reader.peek() == "minute":
        reader.take()
        minute = read_number(reader)
        if minute is None or minute > 59:
            raise reader.error("say a minute from 0 to 59, e.g. 'at minute 30 of every hour'")
        reader.expect("of", "past", why="say 'of every hour'")
        reader.expect("every", "each", why="say 'of every hour'")
        reader.expect("hour", why="say 'of every hour'")
        draft.mark(reader, "every", start)
        draft.minute_of_hour = minute
        return
    found = read_date(reader)
    if found is not None:
        draft.mark(reader, "date", start)
        draft.on_date = found
    times = [read_time(reader)]
    while (reader.peek() == "and" and starts_time(reader.peek(1))) or starts_time(reader.peek()):
        reader.accept("and")
        times.append(read_time(reader))
    if reader.peek() == "local" and reader.peek(1) == "time":
        reader.position += 2  # "Once at 2027-09-05 14:00:00 local time": the zone's wall time
    draft.mark(reader, "at", start)
    draft.times = tuple(times)


def _read_count(reader: Reader, draft: Draft, start: int) -> None:
    word = reader.take()
    if word == "once" and reader.peek() == "at":
        draft.once = True
        return
    count = {"once": 1, "twice": 2}.get(word)
    if count is None:
        reader.position -= 1
        count = read_number(reader)
        reader.expect("times", why="say e.g. 'three times a day at 8:00, 12:00 and 16:00'")
    reader.expect("a", "per", why="say e.g. 'twice a day at 9:00 and 17:00'")
    reader.expect("day", why="say e.g. 'twice a day at 9:00 and 17:00'")
    draft.mark(reader, "how many times a day", start)
    draft.per_day = count


def _read_between(reader: Reader, draft: Draft, start: int) -> None:
    reader.take()
    opens = read_time(reader)
    reader.expect("and", "to", why="say e.g. 'between 8:00 and 18:00'")
    closes = read_time(reader)
    if closes[:2] <= opens[:2]:
        raise reader.error(
            "the window closes before it opens; say e.g. 'between 8:00 and 18:00'", -1
        )
    draft.mark(reader, "between", start)
    draft.window = (opens, closes)


def _read_in(reader: Reader, draft: Draft, start: int) -> None:
    reader.take()
    _read_zone(reader, draft, start)


def _read_zone(reader: Reader, draft: Draft, start: int) -> None:
    if reader.done:
        raise reader.error("say an IANA time zone, e.g. 'in Europe/Riga'")
    name = reader.words[reader.position]
    reader.take()
    draft.mark(reader, "time zone", start)
    draft.zone = "UTC" if name.lower() == "utc" else name


def _read_start(reader: Reader, draft: Draft, start: int) -> None:
    reader.take()
    day = read_date(reader)
    if day is None:
        raise reader.error("say the date it starts from, e.g. 'starting 4 January 2027'")
    clock: Time = (0, 0, 0)
    if starts_time(reader.peek()):
        clock = read_time(reader)
    begins = datetime(day.year, day.month, day.day, *clock)  # noqa: DTZ001 - wall time
    if reader.accept("utc"):
        begins = begins.replace(tzinfo=UTC)
    draft.mark(reader, "start", start)
    draft.start = begins


def _read_noise(reader: Reader, draft: Draft, start: int) -> None:
    reader.take()  # "and" between clauses: "every monday at 9:00 and in Europe/Riga"


_CLAUSES: dict[str, Any] = {
    "every": _read_every,
    "each": _read_every,
    "daily": _read_shorthand,
    "hourly": _read_shorthand,
    "weekly": _read_shorthand,
    "on": _read_on,
    "at": _read_at,
    "once": _read_count,
    "twice": _read_count,
    "between": _read_between,
    "in": _read_in,
    "from": _read_start,
    "starting": _read_start,
    "and": _read_noise,
}
for _word in ("one", "two", "three", "four", "five", "six"):
    _CLAUSES[_word] = _read_count
