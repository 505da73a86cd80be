"""The worker's lease keeper: one thread renews every running attempt's lease every third of
it, stops at release, and drops an attempt whose lease was lost (real thread, short leases,
polled with a timeout)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from scheduler_app.clock import FakeClock
from scheduler_app.worker.leases import LeaseKeeper
from tests.integration.support import START

LEASE = timedelta(seconds=0.15)


def eventually(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    ends = time.monotonic() + timeout
    while time.monotonic() < ends:
        if check():
            return True
        time.sleep(0.01)
    return False


class Renewals:
    def __init__(self, alive: bool = True) -> None:
        self.calls: list[tuple[str, int]] = []
        self.alive = alive
        self.lock = threading.Lock()

    def __call__(
        self,
        occurrence_id: str,
        *,
        token: int,
        now: datetime,
        lease: timedelta,
        scheduled_for: datetime | None = None,
    ) -> bool:
        with self.lock:
            self.calls.append((occurrence_id, token))
        return self.alive

    def count(self, occurrence_id: str) -> int:
        with self.lock:
            return sum(1 for called, _ in self.calls if called == occurrence_id)


def test_held_attempts_are_renewed_until_released() -> None:
    renewals = Renewals()
    keeper = LeaseKeeper(renewals)
    clock = FakeClock(START)
    first = keeper.hold("a", token=3, lease=LEASE, clock=clock)
    keeper.hold("b", token=1, lease=LEASE, clock=clock)
    assert eventually(lambda: renewals.count("a") >= 2 and renewals.count("b") >= 2)
    assert ("a", 3) in renewals.calls
    keeper.release(first)
    before, others = renewals.count("a"), renewals.count("b")
    assert eventually(lambda: renewals.count("b") >= others + 2)
    assert renewals.count("a") <= before + 1  # at most a pass already under way
    assert keeper.holding() == 1


def test_a_lost_lease_is_dropped() -> None:
    renewals = Renewals(alive=False)
    keeper = LeaseKeeper(renewals)
    keeper.hold("lost", token=1, lease=LEASE, clock=FakeClock(START))
    assert eventually(lambda: keeper.holding() == 0)
    assert renewals.calls == [("lost", 1)]


def test_a_new_attempt_is_renewed_in_time_while_the_thread_idles() -> None:
    """The idle thread looks again before a new attempt's first renewal is due."""
    renewals = Renewals()
    keeper = LeaseKeeper(renewals)
    clock = FakeClock(START)
    lease = timedelta(seconds=0.9)
    keeper.release(keeper.hold("first", token=1, lease=lease, clock=clock))
    started = time.monotonic()
    keeper.hold("second", token=1, lease=lease, clock=clock)
    assert eventually(lambda: renewals.count("second") >= 1)
    assert time.monotonic() - started < lease.total_seconds()
