"""The words of schedule phrases: a token reader and the small readers for weekdays, numbers
and ordinals. Pure: no Django, no clock."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

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
_WORKDAY_WORDS = ("weekday", "weekdays", "workday", "workdays")
_WEEKEND_WORDS = ("weekend", "weekends")
_RANGE_WORDS = ("to", "through", "thru", "until", "till", "-")
NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "fifteen": 15, "twenty": 20, "thirty": 30, "forty-five": 45, "ninety": 90,
}  # fmt: skip
ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "last": -1}
_ORDINAL_WORDS = {
    "1st": 1, "2nd": 2, "3rd": 3, "4th": 4, "5th": 5, "sixth": 6, "seventh": 7, "eighth": 8,
    "ninth": 9, "tenth": 10, "other": 2, **ORDINALS,
}  # fmt: skip
_SEPARATORS = re.compile(r"[,;()]")
_DASHES = re.compile(r"[\u2010-\u2015]")
_TIME_RANGE = re.compile(
    r"^(\d{1,2}(?:[:.]\d{2})?(?:am|pm)?)-(\d{1,2}(?:[:.]\d{2})?(?:am|pm)?)$", re.IGNORECASE
)


class PhraseError(InvalidRule):
    """Text that is not a schedule phrase; the message names the part not understood."""


def refuse(text: str, part: str, why: str) -> PhraseError:
    """The error for ``part`` of ``text``: what is wrong with it and how to say it instead."""
    return PhraseError("text", f"could not read {part!r} in {text!r}: {why}", code="text")


def _split(text: str) -> list[str]:
    words: list[str] = []
    for word in _SEPARATORS.sub(" ", _DASHES.sub("-", text)).split():
        if word.lower() in ("quarter-hour", "half-hour"):  # "every quarter-hour"
            words.extend(word.split("-"))
            continue
        pair = _TIME_RANGE.match(word)  # "9am-5pm", "9:00-17:00": a window's two ends
        words.extend([pair[1], "-", pair[2]] if pair else [word])
    if words and words[-1].endswith(".") and words[-1].lower() not in ("a.m.", "p.m."):
        words[-1] = words[-1][:-1]  # the full stop that ends a sentence
    return [word for word in words if word]


@dataclass
class Reader:
    """The words of a phrase and the position of the next one to read."""

    text: str
    words: list[str] = field(default_factory=list)
    position: int = 0

    @classmethod
    def of(cls, text: str) -> Reader:
        return cls(text=text, words=_split(text))

    def peek(self, ahead: int = 0) -> str:
        index = self.position + ahead
        return self.words[index].lower() if 0 <= index < len(self.words) else ""

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

    def accept_words(self, *words: str) -> bool:
        """Take the next words when they are exactly ``words`` ("of", "the", "month")."""
        if all(self.peek(i) == word for i, word in enumerate(words)):
            self.position += len(words)
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
        part = self.words[index] if 0 <= index < len(self.words) else "(end of text)"
        return refuse(self.text, part, why)


def weekday(word: str) -> int | None:
    """0 = Monday .. 6 = Sunday, or None."""
    return _DAY_WORDS.get(word)


def ordinal(word: str) -> int | None:
    """``first``/``1st`` .. ``tenth``, ``last`` (-1), ``other`` (2); None for other words."""
    return _ORDINAL_WORDS.get(word)


def read_weekdays(reader: Reader) -> frozenset[int] | None:
    """``monday``, ``mondays``, ``mon-fri``, ``monday to friday``, ``monday and friday``,
    ``monday, wednesday and friday``, ``weekdays``, ``business days``, ``weekend``; None when
    no day comes next."""
    days: set[int] = set()
    while True:
        found = _read_day_group(reader)
        if found is None:
            break
        days |= found
        if not (reader.peek() in ("and", "or") and starts_days(reader, 1)):
            if starts_days(reader, 0):
                continue  # a list written with commas: "monday, wednesday and friday"
            break
        reader.take()
    return frozenset(days) if days else None


def starts_days(reader: Reader, ahead: int) -> bool:
    word = reader.peek(ahead)
    return (
        weekday(word) is not None
        or word in _WORKDAY_WORDS
        or word in _WEEKEND_WORDS
        or (word in ("business", "working", "work") and reader.peek(ahead + 1) in ("day", "days"))
        or ("-" in word and weekday(word.partition("-")[0]) is not None)
    )


def _read_day_group(reader: Reader) -> set[int] | None:
    word = reader.peek()
    if word in _WORKDAY_WORDS:
        reader.take()
        return set(WEEKDAYS)
    if word in ("business", "working", "work") and reader.peek(1) in ("day", "days"):
        reader.position += 2
        return set(WEEKDAYS)
    if word in _WEEKEND_WORDS:
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
    if reader.peek() in _RANGE_WORDS and weekday(reader.peek(1)) is not None:
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


def read_number(reader: Reader) -> int | None:
    word = reader.peek()
    if word in NUMBER_WORDS:
        reader.take()
        return NUMBER_WORDS[word]
    if word.isascii() and word.isdigit() and len(word) <= 5:
        reader.take()
        return int(word)
    return None
