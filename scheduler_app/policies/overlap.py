"""Overlap decisions: what a new occurrence becomes while others of its schedule are open.

Pure. The caller holds the schedule's row lock, so two beats (or a beat and a worker
finishing a run) never both decide "nothing is running".
"""

from __future__ import annotations

from typing import NamedTuple

ALLOW = "allow"
SKIP = "skip"
BUFFER_ONE = "buffer_one"
BUFFER_ALL = "buffer_all"
CANCEL_PREVIOUS = "cancel_previous"

PENDING = "pending"
BUFFERED = "buffered"
SKIPPED = "skipped"


class OverlapDecision(NamedTuple):
    states: tuple[str, ...]
    """For each new occurrence, in slot order: ``pending``, ``buffered`` or ``skipped``."""
    cancel_active: bool = False
    """cancel_previous: ask the open ones to stop."""
    supersede_buffered: bool = False
    """cancel_previous: occurrences already waiting are replaced by the newest one."""


def decide_overlap(
    policy: str,
    *,
    active: int,
    buffered: int,
    new: int,
    catching_up: bool = False,
    new_catch_up: int = 0,
) -> OverlapDecision:
    """Decide the states of ``new`` occurrences given ``active`` open and ``buffered`` waiting.

    ``active`` counts pending, dispatched, running and retrying occurrences. Occurrences
    created together (a catch-up batch) on an idle schedule run one after another under
    every policy but ``allow``: the first starts, the rest wait in slot order, because the
    misfire policy asked for each of them (``buffer_one`` still keeps only one waiting).

    ``catching_up``: the schedule drains a backlog (rows a downtime left, created together,
    and the rows that joined them since) and none of its runs overran (the caller decides:
    ``overlapping``). Under ``skip`` that is not an overlap: a row waiting in the backlog has
    not started, let alone overrun, so on-time slots join the end of the backlog in slot
    order instead of being skipped. The backlog stays bounded: it drains faster than slots
    come as long as no run overruns, and as soon as one does the caller stops saying
    ``catching_up`` and ``skip`` applies as usual. ``new_catch_up`` is how many of the new
    occurrences (they come first) are catch-up runs; those are skipped while another run is
    open. ``buffer_all`` buffers either way; ``buffer_one`` (one place) and
    ``cancel_previous`` (the newest slot wins) keep their rule.
    """
    if policy == ALLOW:
        return OverlapDecision((PENDING,) * new)
    busy = active > 0 or buffered > 0
    if policy == CANCEL_PREVIOUS and busy:
        # The newest slot wins: it waits for the running one to stop; older ones give way.
        states = (SKIPPED,) * (new - 1) + (BUFFERED,) if new else ()
        return OverlapDecision(states, cancel_active=active > 0, supersede_buffered=True)
    if policy == SKIP and busy:
        if not catching_up:
            return OverlapDecision((SKIPPED,) * new)
        late = (SKIPPED,) * min(new_catch_up, new)
        return OverlapDecision(late + (BUFFERED,) * (new - len(late)))
    capacity = 1 if policy == BUFFER_ONE else None
    waiting = buffered
    states_list: list[str] = []
    for _ in range(new):
        if not busy:
            states_list.append(PENDING)
            busy = True
        elif capacity is None or waiting < capacity:
            states_list.append(BUFFERED)
            waiting += 1
        else:
            states_list.append(SKIPPED)
    return OverlapDecision(tuple(states_list))
