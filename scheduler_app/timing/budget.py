"""The search budget: how much work one computation of a slot may do before it gives up.

Every question the engine answers (the next slot, the previous slot, the slots of a range)
walks candidate times: wall times a cron or RRULE produces, grid points of an interval, the
days a solar rule is asked about. Filters (active windows, holidays, ``max_count``, the
rule's own gaps) can reject candidate after candidate, and a rule that meets its filter
about once (a solar event against a one-minute window) walked to year 1 or 9999. So each
question carries a ``Meter`` made from the timing's ``SearchBudget``; every candidate is
charged to it, and a question that uses up its candidates, or looks further than ``span``
past where it started (or past the last slot it handed out), raises ``SearchExhausted``
saying which of the two ran out.

The first candidate after the start (or after a slot) is never refused for its distance: a
rule whose next slot simply *is* far away (a one-time rule in 2090, a yearly interval)
answers it at the cost of one candidate. The span bounds a walk over rejected candidates.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from time import thread_time

from scheduler_app.errors import SearchExhausted
from scheduler_app.timing.zones import Resolved

DEFAULT_CANDIDATES = 100_000
"""Candidate times one question may evaluate: at most a few tenths of a second of CPU."""
DEFAULT_SPAN_DAYS = 3653
"""How far one question may look past its start (or its last slot) over rejected candidates:
ten years, so a February 29 rule (eight years apart around 2100) is still found."""
DEFAULT_SECONDS = 0.25
"""CPU seconds (of the asking thread) one question may spend per slot: the bound on work no
candidate count sees, such as dateutil's own steps between two candidates (a second-by-second
rule's hour and minute filters: ~8 ms per slot, security review 9). A few thousand times what
an ordinary slot costs (2-20 µs)."""
CANDIDATES_SETTING = "SCHEDULER_SEARCH_CANDIDATES"
SPAN_SETTING = "SCHEDULER_SEARCH_SPAN_DAYS"
SECONDS_SETTING = "SCHEDULER_SEARCH_SECONDS"
_CHECK_EVERY = 8
"""Candidates between two looks at the thread's CPU clock (~0.4 µs a look)."""
FIX = (
    "widen the active window, drop the holiday exclusion or max_count, pick a rule that "
    f"fires more often, or raise {SPAN_SETTING} / {CANDIDATES_SETTING} / {SECONDS_SETTING}"
)
_DAY = timedelta(days=1)


@dataclass(frozen=True, kw_only=True)
class SearchBudget:
    """The most one slot computation may do: ``candidates`` evaluated, ``span`` looked over."""

    candidates: int = DEFAULT_CANDIDATES
    span: timedelta = timedelta(days=DEFAULT_SPAN_DAYS)
    seconds: float = DEFAULT_SECONDS
    """CPU seconds per slot (``DEFAULT_SECONDS``)."""

    def __post_init__(self) -> None:
        if isinstance(self.candidates, bool) or not isinstance(self.candidates, int):
            raise TypeError(f"candidates must be a whole number, got {self.candidates!r}")
        if isinstance(self.seconds, bool) or not isinstance(self.seconds, int | float):
            raise TypeError(f"seconds must be a number, got {self.seconds!r}")
        if self.candidates < 0 or self.span <= timedelta(0) or not self.seconds > 0:
            raise ValueError(
                f"a search budget needs candidates >= 0, a positive span and seconds: {self}"
            )

    def meter(
        self,
        origin: datetime,
        *,
        stop_at: datetime | None = None,
        strict: bool = False,
        per_slot: bool = True,
        ceiling: int | None = None,
    ) -> Meter:
        """A fresh meter for one question that starts looking at ``origin``."""
        return Meter(
            budget=self,
            origin=origin,
            stop_at=stop_at,
            strict=strict,
            per_slot=per_slot,
            ceiling=ceiling,
            ceiling_seconds=None
            if ceiling is None
            else self.seconds * ceiling / max(self.candidates, 1),
        )


@dataclass(kw_only=True)
class Meter:
    """The work of one question so far; charged for every candidate time."""

    budget: SearchBudget
    origin: datetime
    """Where the current search started: the question's instant, then each slot handed out."""
    stop_at: datetime | None = None
    """No slot after this instant is wanted (a range's end, ``ends_at``): candidates past it
    end the walk instead of being charged (every later slot would be later still)."""
    strict: bool = False
    """The validation search: the engine's "the rule has ended" guesses raise instead."""
    used: int = 0
    """Candidates since the origin."""
    total: int = 0
    """Candidates in all (tests and benchmarks read it)."""
    per_slot: bool = True
    """Each slot handed out starts a new search (False: one budget for the whole question)."""
    ceiling: int | None = None
    """Candidates in all, over every slot of the question (a preview's list, a backfill's
    range): a list of slots each near the budget stops here instead of costing the budget
    once per slot. None: no such bound."""
    ceiling_seconds: float | None = None
    """CPU seconds in all, over every slot of the question: the same multiple of the budget's
    ``seconds`` as ``ceiling`` is of its candidates."""
    began: float = field(default_factory=thread_time)
    """The thread's CPU clock when the question began."""
    slot_began: float = -1.0
    """... and when the search for the current slot began (``began`` until a slot is found)."""

    def charge(self, instant: datetime) -> None:
        """Count one candidate at ``instant``; raise ``SearchExhausted`` past the budget."""
        self.used += 1
        self.total += 1
        if self.used > self.budget.candidates:
            self.exhaust("candidates")
        if self.ceiling is not None and self.total > self.ceiling:
            self.exhaust("total")
        if self.used > 1 and instant - self.origin > self.budget.span:
            self.exhaust("span")
        if self.total % _CHECK_EVERY == 0:
            self._check_time()

    def _check_time(self) -> None:
        now = thread_time()
        since = self.began if self.slot_began < 0 else self.slot_began
        if now - since > self.budget.seconds:
            self.exhaust("time")
        if self.ceiling_seconds is not None and now - self.began > self.ceiling_seconds:
            self.exhaust("total")

    def candidates(self, items: Iterable[Resolved]) -> Iterator[Resolved]:
        """``items`` (increasing instants first in each tuple), charged, up to ``stop_at``."""
        stop_at = self.stop_at
        for item in items:
            if stop_at is not None and item[0] > stop_at:
                return
            self.charge(item[0])
            yield item

    def quiet(self, instant: datetime) -> bool:
        """Charge a candidate that produced no item (a day without a solar event); False when
        it is past ``stop_at`` by more than a day, and the walk should end."""
        if self.stop_at is not None and instant - self.stop_at > _DAY:
            return False
        self.charge(instant)
        return True

    def found(self, instant: datetime) -> None:
        """A slot was handed to the caller: the next one is a new search from it (unless the
        meter bounds a whole question, ``per_slot=False``: the previous-slot search)."""
        if self.per_slot:
            self.used = 0
            self.origin = instant
            self.slot_began = thread_time()

    def exhaust(self, what: str, *, before: datetime | None = None, detail: str = "") -> None:
        """Give up: ``what`` ran out (``candidates``, ``span``, or an engine bound such as
        ``window``, described by ``detail``); ``before``: the search looked back from there."""
        raise SearchExhausted(_message(self, what, before, detail), exhausted=what)


def _message(meter: Meter, what: str, before: datetime | None, detail: str) -> str:
    budget = meter.budget
    where = (
        f"before {before:%Y-%m-%d %H:%M} UTC"
        if before is not None
        else f"after {meter.origin:%Y-%m-%d %H:%M} UTC"
    )
    if what == "total":
        spent = (
            f"{meter.ceiling or 0:,} candidate times or {meter.ceiling_seconds or 0:g} s of CPU "
            f"in all for this list of slots, the last {where} (a multiple of the search budget, "
            f"{CANDIDATES_SETTING}, {SECONDS_SETTING}): each slot takes much work"
        )
    elif what == "candidates":
        spent = (
            f"{budget.candidates:,} candidate times {where} without a slot "
            f"(the search budget, {CANDIDATES_SETTING})"
        )
    elif what == "time":
        spent = (
            f"{budget.seconds:g} s of CPU {where} without a slot (the search budget, "
            f"{SECONDS_SETTING}): each candidate time costs the rule's library much work"
        )
    elif what == "span":
        spent = (
            f"no slot within {budget.span.days:,} days {where} (the search budget, {SPAN_SETTING})"
        )
    else:
        spent = f"no slot found {where}: {detail or what}"
    return (
        f"the rule's slots are rarer than the scheduler searches for: {spent}; the active "
        f"window, holidays, bounds or max_count reject nearly every time the rule produces. {FIX}"
    )
