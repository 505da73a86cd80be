"""Days of the month in schedule phrases: ``the first monday of the month``, ``last friday of
every month``, ``the 1st and 15th``, ``the last day of the month``, ``on day 1 of the month``,
``the first weekday of the month``, ``the 15th of March`` (a date of every year).
Pure: no Django, no clock."""

from __future__ import annotations

from scheduler_app.timing.phrases.clock import (
    MONTHS,
    DateWords,
    is_day_of_month,
    month_and_year,
    read_day_of_month,
)
from scheduler_app.timing.phrases.draft import Draft
from scheduler_app.timing.phrases.words import Reader, ordinal, weekday

ANY_WEEKDAY = 7
"""The weekday of "the first weekday of the month": any of Monday to Friday."""
_OF_MONTH = (
    ("of", "the", "month"),
    ("of", "every", "month"),
    ("of", "each", "month"),
    ("every", "month"),
    ("each", "month"),
    ("a", "month"),
)
_DAY_ORDINALS = ("first", "second", "third", "fourth", "fifth", "last")


def starts_month_part(reader: Reader) -> bool:
    """Whether a day of the month comes next ("the 15th", "first monday", "last day")."""
    at = 1 if reader.peek() == "the" else 0
    word, after = reader.peek(at), reader.peek(at + 1)
    if at and (is_day_of_month(word) or word.isdigit()):
        return after not in MONTHS
    if ordinal(word) is not None and word in (*_DAY_ORDINALS, "1st", "2nd", "3rd", "4th", "5th"):
        of_month = after == "of" and reader.peek(at + 2) not in MONTHS  # "1st of every month"
        return (
            at == 1 or after in ("day", "weekday", "and") or of_month or weekday(after) is not None
        )
    if is_day_of_month(word):
        return reader.peek(at + 1) not in MONTHS and reader.peek(at + 2) not in MONTHS
    return False


def read_month_part(reader: Reader, draft: Draft, start: int, *, every: bool = False) -> None:
    reader.accept("the")
    if reader.peek() == "day" and reader.peek(1)[:1].isdigit():
        reader.take()
        days: list[int] = [read_day_of_month(reader) or 1]
        nth: list[tuple[int, int]] = []
    else:
        days, nth = _read_items(reader)
    date = _month_of_year(reader, days, nth)
    if date is not None:
        draft.mark(reader, "date", start)
        draft.on_date = date
        return
    said = _of_month(reader)
    if nth and not (said or every or (draft.every or (0, ""))[1] == "month"):
        raise reader.error("say which month: 'of the month' (every month)")
    draft.mark(reader, "day of the month", start)
    draft.of_month = said
    if nth:
        draft.nth = tuple(nth)
    else:
        draft.month_days = tuple(days)
    if every:
        draft.every = (1, "month")


def _read_items(reader: Reader) -> tuple[list[int], list[tuple[int, int]]]:
    days: list[int] = []
    nth: list[tuple[int, int]] = []
    pending: list[int] = []
    while True:
        word = reader.peek()
        number = ordinal(word)
        if word in _DAY_ORDINALS or (
            word in ("1st", "2nd", "3rd", "4th", "5th")
            and (weekday(reader.peek(1)) is not None or reader.peek(1) == "weekday")
        ):
            reader.take()
            pending.append(number or 1)
            _attach(reader, pending, days, nth)
        elif (day := read_day_of_month(reader)) is not None:
            days.append(day)
            reader.accept("day")
        else:
            raise reader.error("say e.g. 'the first monday', 'the last day' or 'the 15th'")
        joined = reader.peek() in ("and", "&")
        the = reader.peek(int(joined)) == "the"  # "the 1st and the 15th"
        if not _item_follows(reader.peek(int(joined) + int(the))) or (pending and not joined):
            break
        reader.position += int(joined) + int(the)
    if pending:
        raise reader.error("say a weekday or 'day', e.g. 'the first and third monday'")
    if days and nth:
        raise reader.error("say days of the month or weekdays of the month, not both", -1)
    return days, nth


def _item_follows(word: str) -> bool:
    return (ordinal(word) is not None and word != "other") or is_day_of_month(word)


def _attach(
    reader: Reader, pending: list[int], days: list[int], nth: list[tuple[int, int]]
) -> None:
    """The weekday (or "day") after ordinals closes them: "first and third monday"."""
    word = reader.peek()
    found = weekday(word)
    if found is None and word == "weekday":
        found = ANY_WEEKDAY
    if found is not None:
        reader.take()
        nth.extend((n, found) for n in pending)
        pending.clear()
        return
    if word == "day" or reader.peek() in ("of", "") or _ends_items(reader):
        reader.accept("day")
        for n in pending:
            if n not in (1, -1):
                raise reader.error("say 'the 2nd' for a day of the month", -1)
        days.extend(pending)
        pending.clear()


def _ends_items(reader: Reader) -> bool:
    return reader.peek() not in ("and", "&") and not _item_follows(reader.peek())


def _month_of_year(reader: Reader, days: list[int], nth: list[tuple[int, int]]) -> DateWords | None:
    """ "the 15th of March": one date of every year (or, with a year, one date)."""
    if nth or len(days) != 1 or days[0] < 1:
        return None
    if reader.peek() == "of" and reader.peek(1) in MONTHS:
        reader.take()
        return month_and_year(reader, days[0])
    return None


def _of_month(reader: Reader) -> bool:
    return any(reader.accept_words(*words) for words in _OF_MONTH)
