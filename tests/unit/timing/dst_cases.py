"""Table machinery for the DST tests: one case = a rule near one real transition.

A case lists, for each policy that matters at that transition, the exact UTC slots in a
window, written as space-separated ``YYYY-MM-DDTHH:MM`` (UTC) strings computed by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import pytest

from scheduler_app.timing import Timing, build_timing

from .helpers import window

GAP_POLICIES = ("skip", "shift", "next_valid")
FOLD_POLICIES = ("first", "last", "both")

# The documented defaults ('auto') per rule kind; "star" is a cron whose minute or hour field
# starts with '*', "cron" any other cron, "once" a local wall time.
AUTO = {
    ("cron", "gap"): "next_valid",
    ("cron", "fold"): "first",
    ("star", "gap"): "skip",
    ("star", "fold"): "both",
    ("rrule", "gap"): "shift",
    ("rrule", "fold"): "first",
    ("once", "gap"): "shift",
    ("once", "fold"): "first",
}

L = datetime  # a naive local wall time in the case's zone


@dataclass(frozen=True)
class Case:
    name: str
    zone: str
    kind: str
    rule: str | datetime
    window: str  # "after/until", UTC, as (after, until]
    transition: str  # "gap" or "fold"
    expected: dict[str, str]
    anchor: datetime | None = None

    def timing(self, policy: str, other: str | None = None) -> Timing:
        """The rule with ``policy`` for this transition and ``other`` for the other kind."""
        gap_choice, fold_choice = (policy, other) if self.transition == "gap" else (other, policy)
        return build_timing(
            kind="cron" if self.kind == "star" else self.kind,
            rule=self.rule,
            timezone=self.zone,
            anchor=self.anchor,
            nonexistent=gap_choice,
            ambiguous=fold_choice,
        )

    def slots(self, policy: str, other: str | None = None) -> list[str]:
        after, until = (datetime.fromisoformat(f"{t}+00:00") for t in self.window.split("/"))
        return [slot[:-1] for slot in window(self.timing(policy, other), after, until)]

    def want(self, policy: str) -> list[str]:
        key = AUTO[self.kind, self.transition] if policy == "auto" else policy
        return self.expected[key].split()


def gap(name: str, zone: str, kind: str, rule: str | datetime, window: str, *, skip: str,
        shift: str, next_valid: str, anchor: datetime | None = None) -> Case:  # fmt: skip
    expected = {"skip": skip, "shift": shift, "next_valid": next_valid}
    return Case(name, zone, kind, rule, window, "gap", expected, anchor)


def fold(name: str, zone: str, kind: str, rule: str | datetime, window: str, *, first: str,
         last: str, both: str, anchor: datetime | None = None) -> Case:  # fmt: skip
    expected = {"first": first, "last": last, "both": both}
    return Case(name, zone, kind, rule, window, "fold", expected, anchor)


def pairs(cases: list[Case]) -> list[object]:
    """(case, policy) for every policy of the case's transition, plus 'auto'."""
    return [
        pytest.param(case, policy, id=f"{case.name}-{policy}")
        for case in cases
        for policy in (*case.expected, "auto")
    ]


def check(case: Case, policy: str) -> None:
    """Exact slots for ``policy``; the other kind of choice changes nothing; strictly rising."""
    expected = case.want(policy)
    assert case.slots(policy) == expected
    others = FOLD_POLICIES if case.transition == "gap" else GAP_POLICIES
    for other in others:
        assert case.slots(policy, other) == expected, other
    assert expected == sorted(set(expected))
