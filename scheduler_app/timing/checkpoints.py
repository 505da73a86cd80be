"""Where counted walks stand, remembered between questions.

A rule that counts its slots (an RRULE's ``COUNT``, a schedule's ``max_count``) numbers them
from its origin, so a question about a slot years after the origin had to walk every slot
between: the budget charged that walk (and refused it past the budget), but below the budget
a schedule with a million-slot count started days ago cost a fifth of a second on every
question, on every tick, until its walk grew past the budget and the schedule was parked
(security review 8: sixty of them starved the beat for every tenant).

A walk now leaves a mark every ``EVERY`` slots: (the slot, how many slots up to and including
it). The next question about the same rule starts at the latest mark before the instant it
asks about, with that many slots counted, instead of at the origin: the same slots, in the
same order, with at most ``EVERY`` slots walked before the ones it wants. A walk keeps its
marks only once it reaches the instant it was asked about (``Walk``): one the search budget
stopped before that leaves none, so a rule the budget refuses stays refused, whoever asks
again. The rules are
immutable values, so a mark never goes stale. The marks of at most ``RULES`` rules are kept,
at most ``PER_RULE`` marks each (thinned evenly when there are more), under a lock (a web
server's threads ask about previews at once).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Hashable
from datetime import datetime
from threading import Lock

EVERY = 64
"""Slots between two marks of one walk."""
PER_RULE = 128
RULES = 4096

Mark = tuple[datetime, int]
"""(a slot, the number of slots from the origin up to and including it)."""


class Checkpoints:
    """Marks of counted walks, per rule."""

    def __init__(self, rules: int = RULES, per_rule: int = PER_RULE) -> None:
        self._marks: OrderedDict[Hashable, list[Mark]] = OrderedDict()
        self._rules = rules
        self._per_rule = per_rule
        self._lock = Lock()

    def before(self, rule: Hashable, instant: datetime, *, inclusive: bool) -> Mark | None:
        """The latest mark of ``rule`` at (``inclusive``) or before ``instant``."""
        with self._lock:
            marks = self._marks.get(rule)
            if not marks:
                return None
            self._marks.move_to_end(rule)
            find = bisect_right if inclusive else bisect_left
            index = find(marks, instant, key=lambda mark: mark[0])
            return marks[index - 1] if index else None

    def note(self, rule: Hashable, slot: datetime, count: int) -> None:
        """Remember that ``slot`` is ``rule``'s ``count``-th slot."""
        with self._lock:
            marks = self._marks.setdefault(rule, [])
            self._marks.move_to_end(rule)
            index = bisect_left(marks, slot, key=lambda mark: mark[0])
            if index < len(marks) and marks[index][0] == slot:
                return
            marks.insert(index, (slot, count))
            if len(marks) > self._per_rule:
                marks[:] = marks[1::2] if len(marks) % 2 == 0 else marks[::2]
            if len(self._marks) > self._rules:
                self._marks.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._marks.clear()


class Walk:
    """The marks of one counted walk: kept back until the walk reaches the instant it was
    asked about (``reached``), then written through."""

    def __init__(self, marks: Checkpoints, rule: Hashable, used: int) -> None:
        self.marks = marks
        self.rule = rule
        self.used = used
        """Slots counted so far, from the origin."""
        self._held: list[Mark] | None = []

    def step(self, slot: datetime) -> None:
        """Count ``slot``; mark it every ``EVERY`` slots."""
        self.used += 1
        if self.used % EVERY:
            return
        if self._held is None:
            self.marks.note(self.rule, slot, self.used)
        else:
            self._held.append((slot, self.used))

    def reached(self, slot: datetime) -> None:
        """The walk got where it was asked, at ``slot`` (the last slot it counted): keep its
        marks, and one at ``slot`` (the next question, asked later, starts there, however few
        slots the rule has: a rule with 58 slots in 1,600 years left no mark before)."""
        if self._held is not None:
            for held, count in self._held:
                self.marks.note(self.rule, held, count)
            self._held = None
            self.marks.note(self.rule, slot, self.used)

    @classmethod
    def resume(
        cls, marks: Checkpoints, rule: Hashable, instant: datetime, *, inclusive: bool
    ) -> tuple[Walk, datetime | None]:
        """A walk of ``rule`` towards ``instant``, and where it starts: the latest mark at
        (``inclusive``) or before it (None: at the origin)."""
        mark = marks.before(rule, instant, inclusive=inclusive)
        if mark is None:
            return cls(marks, rule, 0), None
        return cls(marks, rule, mark[1]), mark[0]


COUNTED = Checkpoints()
"""The process's marks (the engine's ``max_count`` walks and the RRULE ``COUNT`` walks)."""
NO_MARKS = Checkpoints(rules=0)
"""Keeps nothing: for walks whose rule is too large to be kept as a key."""
