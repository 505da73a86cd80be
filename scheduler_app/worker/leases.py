"""Lease renewal for running attempts: one daemon thread per worker process renews the leases
of every attempt running in it, each every third of its lease.

A task only registers its attempt on start and drops it on end (a dict write under a lock):
no thread is started or joined per task.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import DatabaseError, connection

from scheduler_app.clock import Clock

logger = logging.getLogger("scheduler_app.tasks")
Renew = Callable[..., bool]
"""``renew(occurrence_id, *, token, now, lease, scheduled_for) -> still held``
(``lifecycle.heartbeat``): ``scheduled_for`` is the slot (the ledger's partition key) the
attempt was held with, or None."""


@dataclass
class _Held:
    occurrence_id: str
    token: int
    lease: timedelta
    clock: Clock
    due: float
    """``time.monotonic()`` of the next renewal."""
    scheduled_for: datetime | None = None


class LeaseKeeper:
    def __init__(self, renew: Renew) -> None:
        self._renew = renew
        self._keys = itertools.count(1)
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._cond = threading.Condition()
        self._held: dict[int, _Held] = {}
        self._idle = 1.0
        """Longest idle wait: a third of the latest lease held."""
        self._thread: threading.Thread | None = None
        self._wakes_at = 0.0
        """When the thread next looks at the leases (``time.monotonic()``)."""

    def hold(
        self,
        occurrence_id: str,
        *,
        token: int,
        lease: timedelta,
        clock: Clock,
        scheduled_for: datetime | None = None,
    ) -> int:
        """Renew this attempt's lease until ``release``; returns the key to release it by.
        ``scheduled_for``: the slot its claim read, passed on to each renewal."""
        if os.getpid() != self._pid:  # a forked child: the parent's thread is not here
            self._reset()
        due = time.monotonic() + lease.total_seconds() / 3
        with self._cond:
            key = next(self._keys)
            self._held[key] = _Held(occurrence_id, token, lease, clock, due, scheduled_for)
            self._idle = lease.total_seconds() / 3
            if self._thread is None or not self._thread.is_alive():
                self._wakes_at = due
                self._thread = threading.Thread(
                    target=self._run, daemon=True, name="occurrence-leases"
                )
                self._thread.start()
            elif due < self._wakes_at:
                self._cond.notify()  # else it looks before this one is due: no wake-up
        return key

    def release(self, key: int) -> None:
        with self._cond:
            self._held.pop(key, None)

    def holding(self) -> int:
        with self._cond:
            return len(self._held)

    def _run(self) -> None:
        while True:
            with self._cond:
                due = self._wait_for_due()
            try:
                for key, held in due:
                    self._renew_one(key, held)
            except DatabaseError as exc:  # the next pass tries again; the lease has slack
                logger.warning(
                    "could not renew running leases: %s",
                    exc,
                    extra={"action": "occurrence.lease_renew_failed"},
                )
            finally:
                connection.close()  # this thread's own connection, between passes

    def _wait_for_due(self) -> list[tuple[int, _Held]]:
        """Wait (holding the condition) until some lease is due; reschedule and return them."""
        while True:
            now = time.monotonic()
            due = [(key, held) for key, held in self._held.items() if held.due <= now]
            if due:
                for _, held in due:
                    held.due = now + held.lease.total_seconds() / 3
                return due
            # Idle, it still looks every third of the last lease it saw: a task that starts
            # meanwhile is due later than that and needs no wake-up (see ``hold``).
            soonest = min((held.due for held in self._held.values()), default=None)
            self._wakes_at = now + self._idle if soonest is None else soonest
            self._cond.wait(self._wakes_at - now)

    def _renew_one(self, key: int, held: _Held) -> None:
        with self._cond:
            if key not in self._held:
                return  # ended meanwhile
        if self._renew(
            held.occurrence_id,
            token=held.token,
            now=held.clock.now(),
            lease=held.lease,
            scheduled_for=held.scheduled_for,
        ):
            return
        logger.warning(
            "lease lost while running",
            extra={"action": "occurrence.lease_lost", "occurrence_id": held.occurrence_id},
        )
        self.release(key)
