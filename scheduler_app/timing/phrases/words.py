"""The words of schedule phrases: a token reader and the small readers for times, dates,
weekdays, numbers and ordinals. Pure: no Django, no clock."""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field
from datetime import date, time

from scheduler_app.errors import InvalidRule

EXAMPLE = "e.g. 'every weekday at 9:00 in Europe/Riga'"
WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
WEEKDAY_CODES = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
CRON_DAYS = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")
WEEKDAYS = frozenset(range(5))
WEEKEND = frozenset({5, 6})
_DAY_WORDS: dict[str, int] = {}
for _index, _name in enumerate(WEEKDAY_NAMES):
    _DAY_WORDS[_name] = _DAY_WORDS[_name + "s"] = _DAY_WORDS[_name[:3]] = _index
_DAY_WORDS.update({"tues": 1, "weds": 2, "thur": 3, "thurs": 3})
MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS["sept"] = 9
NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "last": -1}
_CLOCK = re.compile(r"^(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?(am|pm|a\.m\.|p\.m\.)?$")
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_ORDINAL_DAY = re.compile(r"^(\d{1,2})(st|nd|rd|th)?$")
_SEPARATORS = re.compile(r"[,;()]")


class PhraseError(InvalidRule):
    """Text that is not a schedule phrase; the message names the part not understood."""


def refuse(text: str, part: str, why: str) -> PhraseError:
    """The error for ``part`` of ``text``: what is wrong with it and how to say it instead."""
    return PhraseError("text", f"could not read {part!r} in {text!r}: {why}", code="text")


@dataclass
class Reader:
    """The words of a phrase and the position of the next one to read."""

    text: str
    words: list[str] = field(default_factory=list)
    position: int = 0

    @classmethod
    def of(cls, text: str) -> Reader:
        return cls(text=text, words=_SEPARATORS.sub(" ", text).split())

    def peek(self, ahead: int = 0) -> str:
        index = self.position + ahead
        return self.words[index].lower() if index < len(self.words) else ""

    def take(self) -> str:
        word = self.peek()
        self.position += 1
        return word

    def accept(self, *choices: str) -> bool:
        """Take the next word when it is one of ``choices``."""
        if self.peek() in choices and self.peek():
            self.position += 1
            return True
        return False

    def expect(self, *choices: str, why: str) -> str:
        word = self.peek()
        if word not in choices or not word:
            raise self.error(why)
        self.position += 1
        return word

    @property
    def done(self) -> bool:
        return self.position >= len(self.words)

    def error(self, why: str, ahead: int = 0) -> PhraseError:
        index = self.position + ahead
        part = self.words[index] if index < len(self.words) else "(end of text)"
        return refuse(self.text, part, why)


def weekday(word: str) -> int | None:
    """0 = Monday .. 6 = Sunday, or None."""
    return _DAY_WORDS.get(word)


def read_weekdays(reader: Reader) -> frozenset[int] | None:
    """``monday``, ``mondays``, ``mon-fri``, ``monday to friday``, ``monday and friday``,
    ``monday, wednesday and friday``, ``weekdays``, ``weekend``; None when no day comes next."""
    days: set[int] = set()
    while True:
        found = _read_day_group(reader)
        if found is None:
            break
        days |= found
        if not (reader.peek() == "and" and _starts_days(reader.peek(1))):
            if _starts_days(reader.peek()):
                continue  # a list written with commas: "monday, wednesday and friday"
            break
        reader.take()
    return frozenset(days) if days else None


def _starts_days(word: str) -> bool:
    return (
        weekday(word) is not None
        or word in ("weekday", "weekdays", "weekend", "weekends")
        or ("-" in word and weekday(word.partition("-")[0]) is not None)
    )


def _read_day_group(reader: Reader) -> set[int] | None:
    word = reader.peek()
    if word in ("weekday", "weekdays"):
        reader.take()
        return set(WEEKDAYS)
    if word in ("weekend", "weekends"):
        reader.take()
        return set(WEEKEND)
    first, dash, last = word.partition("-")
    if dash and weekday(first) is not None:
        reader.take()
        return _day_range(reader, weekday(first), weekday(last), last, back=1)
    start = weekday(word)
    if start is None:
        return None
    reader.take()
    if reader.peek() in ("to", "through", "thru", "until") and weekday(reader.peek(1)) is not None:
        reader.take()
        end_word = reader.take()
        return _day_range(reader, start, weekday(end_word), end_word, back=1)
    return {start}


def _day_range(
    reader: Reader, start: int | None, end: int | None, end_word: str, back: int
) -> set[int]:
    if start is None or end is None:
        raise reader.error(f"{end_word!r} is not a weekday; write e.g. 'monday to friday'", -back)
    if end < start:
        raise reader.error("a range of days runs forward in the week, e.g. 'friday to sunday'", -1)
    return set(range(start, end + 1))


def read_time(reader: Reader) -> tuple[int, int, int]:
    """One time of day: ``9:00``, ``17:30``, ``9am``, ``9:30 pm``, ``noon``, ``midnight``."""
    word = reader.peek()
    if word in ("noon", "midday"):
        reader.take()
        return 12, 0, 0
    if word == "midnight":
        reader.take()
        return 0, 0, 0
    match = _CLOCK.match(word)
    suffix = None
    if match and match.group(4) is None and reader.peek(1) in ("am", "pm", "a.m.", "p.m."):
        suffix = reader.peek(1)
    if match is None or (match.group(2) is None and match.group(4) is None and suffix is None):
        raise reader.error("not a time of day; write 9:00, 17:30, 9am, 9:30pm, noon or midnight")
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


def starts_time(word: str) -> bool:
    return word in ("noon", "midday", "midnight") or _CLOCK.match(word) is not None


def read_date(reader: Reader) -> date | None:
    """``5 September 2027``, ``5th of September 2027``, ``September 5 2027``, ``2027-09-05``;
    None when no date comes next. The year is required: the parser does not guess it."""
    word = reader.peek()
    iso = _ISO_DATE.match(word)
    if iso:
        reader.take()
        return _real_date(reader, int(iso.group(1)), int(iso.group(2)), int(iso.group(3)))
    day_match = _ORDINAL_DAY.match(word)
    if day_match and _month_at(reader, 1 + (reader.peek(1) == "of")):
        reader.take()
        reader.accept("of")
        month = MONTHS[reader.take()]
        return _real_date(reader, _year(reader), month, int(day_match.group(1)))
    if word in MONTHS and _ORDINAL_DAY.match(reader.peek(1)):
        reader.take()
        day = int(_ORDINAL_DAY.match(reader.take()).group(1))  # type: ignore[union-attr]
        return _real_date(reader, _year(reader), MONTHS[word], day)
    return None


def _month_at(reader: Reader, ahead: int) -> bool:
    return reader.peek(ahead) in MONTHS


def _year(reader: Reader) -> int:
    word = reader.peek()
    if not (word.isascii() and word.isdigit() and len(word) == 4):
        raise reader.error("give the year after the month, e.g. '5 September 2027'")
    reader.take()
    return int(word)


def _real_date(reader: Reader, year: int, month: int, day: int) -> date:
    try:
        return date(year, month, day)
    except ValueError:
        raise reader.error("not a real date, e.g. '5 September 2027' or 2027-09-05", -1) from None


def read_number(reader: Reader) -> int | None:
    word = reader.peek()
    if word in NUMBER_WORDS:
        reader.take()
        return NUMBER_WORDS[word]
    if word.isascii() and word.isdigit() and len(word) <= 5:
        reader.take()
        return int(word)
    return None


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


def clock_text(value: tuple[int, int, int] | time) -> str:
    if isinstance(value, time):
        return f"{value.hour:02d}:{value.minute:02d}"
    return f"{value[0]:02d}:{value[1]:02d}"
