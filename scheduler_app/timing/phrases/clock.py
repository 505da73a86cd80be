"""Times of day and dates in schedule phrases: ``9:00``, ``9.30pm``, ``noon``, ``half past``
(of every hour), ``5 September 2027``, ``1 January`` (every year). Pure: no Django, no clock."""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, time

from scheduler_app.timing.phrases.words import Reader

MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS["sept"] = 9
_MERIDIEM = ("am", "pm", "a.m.", "p.m.")
_CLOCK = re.compile(r"^(\d{1,2})(?:[:.](\d{2}))?(?::(\d{2}))?(am|pm|a\.m\.|p\.m\.)?$")
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_ORDINAL_DAY = re.compile(r"^(\d{1,2})(st|nd|rd|th)?$")
TIME_HELP = "write 9:00 (24-hour clock), 9am, 9:30pm, noon or midnight"
Time = tuple[int, int, int]


@dataclass(frozen=True)
class DateWords:
    """A date as written: without a year it is a date of every year ("1 January")."""

    year: int | None
    month: int
    day: int


PARTS_OF_DAY = {"morning": range(5, 12), "afternoon": range(12, 18), "evening": range(17, 24)}
"""The hours of "every morning/afternoon/evening at ...": a time written without am/pm is read
in that part of the day ("every evening at 7" is 19:00), any other time is refused."""


def read_time(reader: Reader, part: str | None = None) -> Time:
    """One time of day: ``9:00``, ``17:30``, ``9am``, ``9:30 pm``, ``9.30``, ``noon``,
    ``midnight``. A bare ``9`` is refused (9:00 or 21:00?) unless ``part`` of the day says
    which ("every morning at 9")."""
    if part is not None:
        return _in_part_of_day(reader, part)
    word = reader.peek()
    if word in ("noon", "midday"):
        reader.take()
        return 12, 0, 0
    if word == "midnight":
        reader.take()
        return 0, 0, 0
    if word in ("half", "quarter"):
        raise reader.error(f"say the time of day as digits ({TIME_HELP}), e.g. 9:30 or 21:30")
    match = _CLOCK.match(word)
    suffix = reader.peek(1) if reader.peek(1) in _MERIDIEM else None
    if match and match.group(4):
        suffix = None
    if match is None:
        raise reader.error(f"not a time of day; {TIME_HELP}")
    if match.group(2) is None and match.group(4) is None and suffix is None:
        raise reader.error(_bare_hour(int(match.group(1))))
    reader.take()
    if suffix:
        reader.take()
    hour, minute, second = int(match.group(1)), int(match.group(2) or 0), int(match.group(3) or 0)
    meridiem = (match.group(4) or suffix or "").replace(".", "")
    if meridiem:
        if not 1 <= hour <= 12:
            raise reader.error("with am/pm the hour is 1 to 12, e.g. 9am or 12:30pm", -1)
        hour = hour % 12 + (12 if meridiem == "pm" else 0)
    if hour > 23 or minute > 59 or second > 59:
        raise reader.error("not a time of day: hours run 0-23, minutes 0-59 (e.g. 17:30)", -1)
    return hour, minute, second


def _bare_hour(hour: int) -> str:
    """The refusal of ``at 9``: both readings named, so the writer picks one."""
    if hour == 12:
        return "12 alone is noon or midnight; write 12:00 or noon, 0:00 or midnight"
    if 1 <= hour < 12:
        return (
            f"{hour} alone is {hour}:00 or {hour + 12}:00; write {hour}:00 or {hour + 12}:00 "
            f"(24-hour clock), or {hour}am / {hour}pm"
        )
    return f"an hour is written with its minutes; write {hour}:00 (24-hour clock)"


def _in_part_of_day(reader: Reader, part: str) -> Time:
    """A time after "every morning/afternoon/evening at": ``7`` and ``7:30`` are read in that
    part of the day; a time outside it is refused, never moved."""
    word = reader.peek()
    match = _CLOCK.match(word)
    hours = PARTS_OF_DAY[part]
    if match is None or reader.peek(1) in _MERIDIEM or match.group(4):
        hour, minute, second = read_time(reader)  # noon, 7am: as written
    else:
        reader.take()
        hour, minute, second = (int(match.group(i) or 0) for i in (1, 2, 3))
        if hour not in hours and hour + 12 in hours and hour < 12:
            hour += 12  # "every evening at 7": 19:00
    if hour not in hours or minute > 59 or second > 59:
        raise reader.error(
            f"not a time of the {part} ({hours.start}:00-{hours.stop - 1}:59); write the "
            f"time alone, e.g. 'every day at {hour}:{minute:02d}'", -1
        )  # fmt: skip
    return hour, minute, second


def starts_time(word: str) -> bool:
    return word in ("noon", "midday", "midnight") or _CLOCK.match(word) is not None


def read_past_the_hour(reader: Reader) -> int | None:
    """``half past``, ``quarter past``, ``quarter to``, ``15 minutes past``, ``minute 15``
    (then optionally ``the hour``): the minute of every hour; None when none comes next."""
    if reader.peek() == "a" and reader.peek(1) == "quarter":
        reader.take()  # "at a quarter past"
    word, after = reader.peek(), reader.peek(1)
    if word == "half" and after == "past":
        minute = 30
    elif word == "quarter" and after in ("past", "after", "to"):
        minute = 45 if after == "to" else 15
    elif (
        word.isdigit()
        and after in ("minutes", "minute", "min", "mins")
        and reader.peek(2)
        in (
            "past",
            "after",
        )
    ):
        minute = int(word)
        reader.take()
    elif word == "minute" and after.isdigit():
        minute = int(after)
    else:
        return None
    reader.position += 2
    if minute > 59:
        raise reader.error("say a minute from 0 to 59, e.g. 'at 15 minutes past every hour'", -1)
    if starts_time(reader.peek()) or reader.peek() in NUMBER_HOURS:
        raise reader.error(f"say the time of day as digits ({TIME_HELP}), e.g. 9:30 or 21:30")
    reader.accept_words("the", "hour")
    return minute


NUMBER_HOURS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def read_date(reader: Reader) -> DateWords | None:
    """``5 September 2027``, ``5th of September``, ``September 5 2027``, ``2027-09-05``;
    None when no date comes next. Without a year it is a date of every year."""
    word = reader.peek()
    iso = _ISO_DATE.match(word)
    if iso:
        reader.take()
        return _real(reader, int(iso.group(1)), int(iso.group(2)), int(iso.group(3)))
    day_match = _ORDINAL_DAY.match(word)
    if day_match and reader.peek(1 + (reader.peek(1) == "of")) in MONTHS:
        reader.take()
        reader.accept("of")
        month = MONTHS[reader.take()]
        return _real(reader, _year(reader), month, int(day_match.group(1)))
    if word in MONTHS and _ORDINAL_DAY.match(reader.peek(1)) and not _is_clock(reader.peek(2)):
        reader.take()
        day = int(_ORDINAL_DAY.match(reader.take()).group(1))  # type: ignore[union-attr]
        return _real(reader, _year(reader), MONTHS[word], day)
    return None


def month_and_year(reader: Reader, day: int) -> DateWords:
    """The month (and optional year) after a day already read: "(15th of) March [2028]"."""
    month = MONTHS[reader.take()]
    return _real(reader, _year(reader), month, day)


def _is_clock(word: str) -> bool:
    return word in _MERIDIEM


def _year(reader: Reader) -> int | None:
    word = reader.peek()
    if word.isascii() and word.isdigit() and len(word) == 4:
        reader.take()
        return int(word)
    return None


def _real(reader: Reader, year: int | None, month: int, day: int) -> DateWords:
    try:
        date(year or 2028, month, day)  # 2028: a leap year, so 29 February is a real date
    except ValueError:
        raise reader.error("not a real date, e.g. '5 September 2027' or 2027-09-05", -1) from None
    return DateWords(year=year, month=month, day=day)


def read_day_of_month(reader: Reader) -> int | None:
    """``15th``, ``1st``, ``15`` (day of the month, 1-31); None when none comes next."""
    match = _ORDINAL_DAY.match(reader.peek())
    if match is None:
        return None
    day = int(match.group(1))
    if not 1 <= day <= 31:
        raise reader.error("a day of the month is 1 to 31")
    reader.take()
    return day


def is_day_of_month(word: str) -> bool:
    match = _ORDINAL_DAY.match(word)
    return match is not None and match.group(2) is not None


def clock_text(value: Time | time) -> str:
    if isinstance(value, time):
        return f"{value.hour:02d}:{value.minute:02d}"
    return f"{value[0]:02d}:{value[1]:02d}"
