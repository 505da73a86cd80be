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
from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduler_app.errors import SearchExhausted
from scheduler_app.timing.zones import Resolved

DEFAULT_CANDIDATES = 100_000
"""Candidate times one question may evaluate: at most a few tenths of a second of CPU."""
DEFAULT_SPAN_DAYS = 3653
"""How far one question may look past its start (or its last slot) over rejected candidates:
ten years, so a February 29 rule (eight years apart around 2100) is still found."""
CANDIDATES_SETTING = "SCHEDULER_SEARCH_CANDIDATES"
SPAN_SETTING = "SCHEDULER_SEARCH_SPAN_DAYS"
FIX = (
    "widen the active window, drop the holiday exclusion or max_count, pick a rule that "
    f"fires more often, or raise {SPAN_SETTING} / {CANDIDATES_SETTING}"
)
_DAY = timedelta(days=1)


@dataclass(frozen=True, kw_only=True)
class SearchBudget:
    """The most one slot computation may do: ``candidates`` evaluated, ``span`` looked over."""

    candidates: int = DEFAULT_CANDIDATES
    span: timedelta = timedelta(days=DEFAULT_SPAN_DAYS)

    def __post_init__(self) -> None:
        if isinstance(self.candidates, bool) or not isinstance(self.candidates, int):
            raise TypeError(f"candidates must be a whole number, got {self.candidates!r}")
        if self.candidates < 0 or self.span <= timedelta(0):
            raise ValueError(f"a search budget needs candidates >= 0 and a positive span: {self}")

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
            f"{meter.ceiling or 0:,} candidate times in all for this list of slots, the last "
            f"{where} (a multiple of the search budget, {CANDIDATES_SETTING}): each slot "
            "takes many"
        )
    elif what == "candidates":
        spent = (
            f"{budget.candidates:,} candidate times {where} without a slot "
            f"(the search budget, {CANDIDATES_SETTING})"
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
