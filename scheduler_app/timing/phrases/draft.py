"""What a phrase said, clause by clause: the reader fills it, the composers turn it into a
rule. Pure: no Django, no clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from scheduler_app.timing.phrases.clock import DateWords, Time
from scheduler_app.timing.phrases.words import Reader, refuse


@dataclass
class Draft:
    """What a phrase said, clause by clause (None: that clause was not given)."""

    every: tuple[int, str] | None = None
    every_duration: timedelta | None = None
    days: frozenset[int] | None = None
    nth: tuple[tuple[int, int], ...] | None = None
    """(n, weekday) pairs: n = 1..5 or -1 (last); weekday 0..6, or 7 = any of Monday-Friday."""
    month_days: tuple[int, ...] | None = None
    """Days of the month, -1 = the last day."""
    of_month: bool = False
    on_date: DateWords | None = None
    once: bool = False
    times: tuple[Time, ...] | None = None
    part: str | None = None
    """"morning", "afternoon" or "evening": the times were read in that part of the day."""
    minute_of_hour: int | None = None
    per: tuple[int, str] | None = None
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
