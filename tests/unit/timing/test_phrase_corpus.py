"""The phrase reader against phrases as people write them (``phrase_corpus.txt``): each line's
expected slots come from an RFC 5545 rule a person wrote, evaluated by python-dateutil, never
from the parser. Nothing may be misread; at least 97% must be read; the rest is refused with a
message that says what to write instead."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from dateutil.rrule import rrulestr

from scheduler_app.timing import build_timing, slots_between
from scheduler_app.timing.phrases import ParsedText, PhraseError, parse_text

CORPUS = Path(__file__).with_name("phrase_corpus.txt")
REFERENCE = datetime(2027, 1, 4, tzinfo=UTC)
"""The instant the corpus's schedules are made at: the anchor of rules counted from "now"."""
FAR = datetime(2100, 1, 1, tzinfo=UTC)
SLOTS = 20
_DTSTART = re.compile(r"^DTSTART(?:;TZID=(?P<zone>[^:]+))?:(?P<value>\d{8}T\d{6})(?P<utc>Z?)$")
_SUGGESTS = ("e.g.", "write", "say", "use", "leave", "give", "add", "let", "widen")


@dataclass(frozen=True)
class Line:
    number: int
    phrase: str
    zone: str
    expected: str

    @property
    def refusal(self) -> str | None:
        return (
            self.expected[len("refuse:") :].strip() if self.expected.startswith("refuse:") else None
        )


def _lines() -> list[Line]:
    lines = []
    for number, raw in enumerate(CORPUS.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        phrase, zone, expected = (part.strip() for part in raw.split("|"))
        lines.append(Line(number, phrase, zone, expected))
    return lines


LINES = _lines()


def expected_slots(line: Line) -> tuple[str, list[datetime]]:
    """The zone and the first slots after ``REFERENCE`` of the line's hand-written rule."""
    parts = line.expected.split()
    zone = line.zone
    start = REFERENCE.astimezone(ZoneInfo(zone))
    if parts[0].startswith("DTSTART"):
        match = _DTSTART.match(parts.pop(0))
        assert match is not None, line
        zone = "UTC" if match["utc"] else match["zone"] or zone
        naive = datetime.strptime(match["value"], "%Y%m%dT%H%M%S")  # noqa: DTZ007 - wall time
        start = naive.replace(tzinfo=ZoneInfo(zone))
    rule = rrulestr(parts[0], dtstart=start)
    slots = []
    for slot in rule:
        if slot > FAR:
            break
        if slot > REFERENCE:
            slots.append(slot.astimezone(UTC))
        if len(slots) == SLOTS:
            break
    return zone, slots


def parsed_slots(parsed: ParsedText) -> list[datetime]:
    """The slots the service would make of the parsed rule, created at ``REFERENCE``."""
    timing = build_timing(
        kind=parsed.kind,
        rule=parsed.rule,
        timezone=parsed.timezone,
        anchor=parsed.anchor or (REFERENCE if parsed.kind in ("rrule", "interval") else None),
        window=parsed.active_window or None,
        window_policy=parsed.window_policy or "defer",
    )
    return slots_between(timing, REFERENCE, FAR, SLOTS)


def _suggests(message: str) -> bool:
    return bool(message.strip()) and any(word in message.lower() for word in _SUGGESTS)


def test_the_corpus_is_large_and_varied() -> None:
    assert len(LINES) >= 400
    assert len({line.phrase.lower() for line in LINES}) >= 400


@pytest.mark.parametrize("line", LINES, ids=lambda line: f"{line.number}:{line.phrase}")
def test_each_phrase_is_read_as_written_or_refused_with_advice(line: Line) -> None:
    if line.refusal is not None:
        with pytest.raises(PhraseError) as caught:
            parse_text(line.phrase, timezone=line.zone)
        assert line.refusal in caught.value.message
        assert _suggests(caught.value.message), caught.value.message
        return
    zone, expected = expected_slots(line)
    parsed = parse_text(line.phrase, timezone=line.zone)
    assert parsed.timezone == zone
    assert parsed_slots(parsed) == expected, (parsed.kind, parsed.rule, parsed.active_window)


def test_nothing_is_misread_and_at_least_97_percent_is_read() -> None:
    read = misread = refused = 0
    for line in LINES:
        try:
            parsed = parse_text(line.phrase, timezone=line.zone)
        except PhraseError as error:
            refused += 1
            assert _suggests(error.message), (line.phrase, error.message)
            continue
        if line.refusal is not None:
            misread += 1  # a person would not know what it means: it must not be read
            continue
        zone, expected = expected_slots(line)
        if parsed.timezone != zone or parsed_slots(parsed) != expected:
            misread += 1
        else:
            read += 1
    assert misread == 0
    assert read >= 0.97 * len(LINES), (read, refused, len(LINES))
