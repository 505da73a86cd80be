"""Clauses of schedule phrases besides repetition and days: how many times, the window, the
start and the zone. Pure: no Django, no clock."""

from __future__ import annotations

from datetime import UTC, datetime

from scheduler_app.timing.phrases.clock import Time, read_date, read_time, starts_time
from scheduler_app.timing.phrases.draft import Draft
from scheduler_app.timing.phrases.words import Reader, read_number, read_weekdays, starts_days
from scheduler_app.timing.phrases.zone_words import zone_name

SHORTHAND = {
    "hourly": (1, "hour"), "daily": (1, "day"), "weekly": (1, "week"),
    "fortnightly": (2, "week"), "monthly": (1, "month"), "yearly": (1, "year"),
    "annually": (1, "year"),
}  # fmt: skip


def read_count(reader: Reader, draft: Draft, start: int) -> None:
    word = reader.take()
    if word == "once" and reader.peek() == "at":
        draft.once = True
        return
    count = {"once": 1, "twice": 2, "thrice": 3}.get(word)
    if count is None:
        reader.position -= 1
        count = read_number(reader)
        reader.expect("times", why="say e.g. 'three times a day at 8:00, 12:00 and 16:00'")
    unit = SHORTHAND.get(reader.peek(), (0, ""))[1]
    if unit in ("day", "week", "month"):
        reader.take()
    else:
        reader.expect("a", "per", "each", "every", why="say e.g. 'twice a day at 9:00 and 17:00'")
        unit = reader.expect("day", "week", "month", why="say e.g. 'twice a day at 9:00 and 17:00'")
    draft.mark(reader, "how many times", start)
    draft.per = (count or 0, unit)


def read_between(reader: Reader, draft: Draft, start: int) -> None:
    opens = read_time(reader)
    reader.expect("and", "to", "until", "till", "-", why="say e.g. 'between 8:00 and 18:00'")
    closes = read_time(reader)
    if closes[:2] <= opens[:2]:
        raise reader.error(
            "the window closes before it opens; say e.g. 'between 8:00 and 18:00' (a window "
            "across midnight is two schedules)", -1
        )  # fmt: skip
    draft.mark(reader, "between", start)
    draft.window = (opens, closes)


def read_window(reader: Reader, draft: Draft, start: int) -> None:
    reader.take()
    read_between(reader, draft, start)


def read_from(reader: Reader, draft: Draft, start: int) -> None:
    reader.take()
    if starts_days(reader, 0):
        days = read_weekdays(reader)
        draft.mark(reader, "days", start)
        draft.days = days
        return
    saved = reader.position
    if read_date(reader) is not None or reader.peek()[:4].isdigit():
        reader.position = saved
        read_start(reader, draft, start)
        return
    reader.position = saved
    read_between(reader, draft, start)


PART_WORDS = {
    "morning": "morning", "mornings": "morning", "afternoon": "afternoon",
    "afternoons": "afternoon", "evening": "evening", "evenings": "evening",
}  # fmt: skip


def part_of_day(words: list[str]) -> str | None:
    """The part of the day a phrase names anywhere ("at 7 every evening"): its times are read
    in it."""
    return next((PART_WORDS[w.lower()] for w in words if w.lower() in PART_WORDS), None)


def read_part_of_day(reader: Reader, draft: Draft, start: int) -> None:
    """``morning(s)``, ``in the evening``: every day's (or the days') times are in that part."""
    part = PART_WORDS[reader.take()]
    draft.mark(reader, "part of the day", start)
    draft.part = part


def read_in(reader: Reader, draft: Draft, start: int) -> None:
    reader.take()
    if reader.peek() == "the" and reader.peek(1) in PART_WORDS:
        reader.take()
        read_part_of_day(reader, draft, start)
        return
    read_zone(reader, draft, start)


def read_zone(reader: Reader, draft: Draft, start: int) -> None:
    if reader.done:
        raise reader.error("say an IANA time zone, e.g. 'in Europe/Riga'")
    word = reader.words[reader.position]
    name, used, why = zone_name(word, reader.peek(1))
    if name is None:
        raise reader.error(why)
    reader.position += used
    draft.mark(reader, "time zone", start)
    draft.zone = name


def read_start(reader: Reader, draft: Draft, start: int) -> None:
    if reader.peek() in ("starting", "beginning", "from"):
        reader.take()
    reader.accept("on")
    day = read_date(reader)
    if day is None or day.year is None:
        raise reader.error("say the date it starts from, e.g. 'starting 4 January 2027'")
    clock: Time = (0, 0, 0)
    if reader.peek() == "at" and starts_time(reader.peek(1)):
        reader.take()
    if starts_time(reader.peek()):
        clock = read_time(reader)
    begins = datetime(day.year, day.month, day.day, *clock)  # noqa: DTZ001 - wall time
    if reader.accept("utc"):
        begins = begins.replace(tzinfo=UTC)
    draft.mark(reader, "start", start)
    draft.start = begins
