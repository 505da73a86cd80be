"""Misfire decisions: which due slots become occurrences. Pure: no Django, no clock.

Policies return decisions; the materializer writes the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

SKIP = "skip"
FIRE_ONCE = "fire_once"
CATCH_UP = "catch_up"


@dataclass(frozen=True, kw_only=True)
class MisfireRules:
    policy: str
    max_lateness: timedelta
    catch_up_window: timedelta
    catch_up_limit: int


class PlannedSlot(NamedTuple):
    """One slot to materialize (named tuples here: one or more are made per due schedule)."""

    scheduled_for: datetime
    catch_up: bool


class MisfireDecision(NamedTuple):
    emit: tuple[PlannedSlot, ...]
    late: int
    """Slots found later than max_lateness (the 'missed' counter)."""
    skipped: int
    """Late slots not emitted (the 'skipped' counter)."""

    @property
    def caught_up(self) -> int:
        return sum(1 for slot in self.emit if slot.catch_up)


def decide_misfire(
    slots: Sequence[datetime], now: datetime, rules: MisfireRules, *, uncounted_late: int = 0
) -> MisfireDecision:
    """Split due ``slots`` (oldest first, all <= now) into on-time and late, then apply the policy.

    - on time (``now - slot <= max_lateness``): always emitted, ``catch_up=False``;
    - late, ``skip``: none emitted;
    - late, ``fire_once``: only the most recent late slot, and only when no slot is on time
      (the on-time run already covers the missed ones);
    - late, ``catch_up``: the late slots within ``catch_up_window`` of now, at most the
      ``catch_up_limit`` most recent, oldest first.

    ``uncounted_late`` adds late slots the caller did not list (too old to enumerate).
    """
    on_time = [s for s in slots if now - s <= rules.max_lateness]
    late = [s for s in slots if now - s > rules.max_lateness]
    chosen: list[datetime] = []
    if late and rules.policy == FIRE_ONCE and not on_time:
        chosen = [late[-1]]
    elif late and rules.policy == CATCH_UP:
        recent = [s for s in late if now - s <= rules.catch_up_window]
        chosen = recent[-rules.catch_up_limit :] if rules.catch_up_limit > 0 else []
    emit = tuple(PlannedSlot(s, True) for s in chosen) + tuple(
        PlannedSlot(s, False) for s in on_time
    )
    late_total = len(late) + uncounted_late
    return MisfireDecision(emit=emit, late=late_total, skipped=late_total - len(chosen))
