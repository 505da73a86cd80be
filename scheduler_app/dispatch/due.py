"""The due-slot walk of one schedule: which slots are due at ``now``, and the next one after.

One walk per schedule and tick serves both planning (the slots to materialize, the late ones
only counted past the catch-up horizon) and advancing (``following``: the first slot after
``now``, which the walk meets to stop), so a rule is walked once per schedule.
"""

from __future__ import annotations

from collections import deque
from datetime import datetime, timedelta
from typing import NamedTuple

from scheduler_app.conf import get_settings
from scheduler_app.models import Schedule
from scheduler_app.timing import Timing, iter_slots, previous_slot
from scheduler_app.timing.engine import up_to

TICK = timedelta(microseconds=1)


class Due(NamedTuple):
    """One schedule's walk: the due slots, the late ones only counted, the next slot."""

    slots: list[datetime]
    uncounted: int
    following: datetime | None = None
    """The first slot after ``now`` (None: there is none), met where the walk stopped."""
    knows_following: bool = False
    """False when the walk did not start at or before ``now``: ``following`` says nothing."""


def due_slots(
    schedule: Schedule, timing: Timing, now: datetime, *, cap: int | None = None
) -> tuple[list[datetime], int]:
    """Slots from ``next_run_at`` through ``now``, oldest first.

    Slots older than the catch-up horizon are not listed one by one (after a long outage a
    dense rule may have millions): only the most recent of them is, and the rest are counted.
    ``cap`` is ``MAX_SLOTS_PER_TICK`` (read from the settings when not given).
    """
    due = due_walk(schedule, timing, now, cap)
    return due.slots, due.uncounted


Walks = dict[tuple[Timing, datetime, timedelta, int], Due]
"""One batch's walks by (timing, first due slot, catch-up horizon, cap): the batch's schedules
that share a rule, a zone and a due slot (every ``0 9 * * *`` of Europe/Riga due at 09:00)
share one walk. Only short walks are kept (``MEMO_SLOTS``), and only for the batch."""
MEMO_SLOTS = 64


def due_walk(
    schedule: Schedule,
    timing: Timing,
    now: datetime,
    cap: int | None,
    walks: Walks | None = None,
) -> Due:
    """``due_slots`` with where the walk stopped (the first slot after ``now``). ``walks``:
    the batch's walks so far (all at the same ``now``), read and added to."""
    start = schedule.next_run_at
    if start is None:
        return Due([], 0)
    horizon = timedelta(seconds=max(schedule.catch_up_window, schedule.max_lateness))
    if cap is None:
        cap = get_settings().MAX_SLOTS_PER_TICK
    if walks is None:
        return _walk(timing, start, now - horizon, now, cap)
    key = (timing, start, horizon, cap)
    found = walks.get(key)
    if found is None:
        found = _walk(timing, start, now - horizon, now, cap)
        if len(found.slots) <= MEMO_SLOTS:
            walks[key] = found
    return Due(list(found.slots), found.uncounted, found.following, found.knows_following)


def _walk(timing: Timing, start: datetime, cut: datetime, now: datetime, cap: int) -> Due:
    if start > cut:
        return _recent(timing, start - TICK, now, cap)
    older = 0
    for older, _ in enumerate(up_to(iter_slots(timing, start - TICK), cut), start=1):
        if older >= cap:
            break
    last_old = previous_slot(timing, cut) if older else None
    recent = _recent(timing, cut, now, cap)
    slots = ([last_old] if last_old is not None and last_old >= start else []) + recent.slots
    return Due(
        slots,
        max(older - 1, 0) + recent.uncounted,
        recent.following,
        recent.knows_following,
    )


def _recent(timing: Timing, after: datetime, until: datetime, cap: int) -> Due:
    """The last ``cap`` slots in (after, until], how many older ones were dropped, and the
    first slot after ``until`` (the walk has to look at it to stop)."""
    kept: deque[datetime] = deque(maxlen=cap)
    seen = 0
    following = None
    for slot in iter_slots(timing, after):
        if slot > until:
            following = slot
            break
        kept.append(slot)
        seen += 1
    return Due(list(kept), seen - len(kept), following, knows_following=after <= until)
