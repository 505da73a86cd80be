"""Fair queueing of pings: one bounded lane per tenant, served in turn.

Pings of every tenant share a process's few sender threads. Without lanes, one tenant whose
endpoints hang (each ping holds a thread until ``SCHEDULER_PING_TIMEOUT``) kept every thread
busy and delayed or dropped the pings of every other tenant. With lanes:

- each tenant has its own queue of at most ``TENANT_QUEUE`` pings (past it, *its* new pings are
  dropped; the others' are not), and all lanes together hold at most ``QUEUE_SIZE``;
- a sender thread takes the next ping from the next tenant in turn (round robin), skipping a
  tenant that already has ``TENANT_SENDERS`` pings in flight: one tenant never holds more than
  that share of the threads, so another tenant's ping waits for no hanging endpoint;
- the pings of one check are sent one after the other, in the order they were made (``/start``
  before the success): a check's next ping waits until its previous one is done.

The beat's own ping (``tenant=None``) has a lane of its own like any tenant.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

QUEUE_SIZE = 5_000
"""Pings waiting per process, all tenants together."""
TENANT_QUEUE = 250
"""Pings waiting per tenant; past it that tenant's new pings are dropped."""
TENANT_SENDERS = 2
"""Sender threads one tenant's pings may hold at once (of ``pings.THREADS``)."""


class Lined(Protocol):
    """What a lane holds: a ping with its tenant and the check it belongs to."""

    @property
    def tenant(self) -> str | None: ...

    @property
    def lane_check(self) -> Hashable: ...


P = TypeVar("P", bound=Lined)


class Lanes(Generic[P]):
    """Per-tenant FIFO lanes served round robin, with a cap of pings in flight per tenant
    and one ping in flight per check. Thread-safe; ``take`` blocks until a ping may go."""

    def __init__(
        self,
        *,
        size: int = QUEUE_SIZE,
        per_tenant: int = TENANT_QUEUE,
        senders_per_tenant: int = TENANT_SENDERS,
    ) -> None:
        self.size, self.per_tenant, self.senders_per_tenant = size, per_tenant, senders_per_tenant
        self._ready = threading.Condition()
        self._lanes: dict[str | None, deque[P]] = {}
        self._turn: deque[str | None] = deque()
        self._in_flight: Counter[str | None] = Counter()
        self._busy_checks: set[Hashable] = set()
        self._waiting = 0

    def put(self, ping: P) -> bool:
        """Queue ``ping`` in its tenant's lane; False (nothing queued) when that lane or all
        lanes together are full."""
        with self._ready:
            lane = self._lanes.get(ping.tenant)
            if self._waiting >= self.size or (lane is not None and len(lane) >= self.per_tenant):
                return False
            if lane is None:
                lane = self._lanes[ping.tenant] = deque()
                self._turn.append(ping.tenant)
            lane.append(ping)
            self._waiting += 1
            self._ready.notify()
            return True

    def take(self) -> P:
        """The next ping to send (blocks until one may go); call ``done`` after sending."""
        with self._ready:
            while True:
                ping = self._next()
                if ping is not None:
                    return ping
                self._ready.wait()

    def done(self, ping: P) -> None:
        """``ping`` was sent or given up: its tenant and check may send again."""
        with self._ready:
            self._in_flight[ping.tenant] -= 1
            if self._in_flight[ping.tenant] <= 0:
                del self._in_flight[ping.tenant]
            self._busy_checks.discard(ping.lane_check)
            self._ready.notify_all()

    def in_flight(self, tenant: str | None) -> int:
        with self._ready:
            return self._in_flight[tenant]

    def _next(self) -> P | None:
        """The first sendable ping of the first tenant in turn that may send; that tenant
        goes to the back of the turn. None when no tenant may send now."""
        for _ in range(len(self._turn)):
            tenant = self._turn[0]
            self._turn.rotate(-1)
            if self._in_flight[tenant] >= self.senders_per_tenant:
                continue
            ping = self._first_free(self._lanes[tenant])
            if ping is None:
                continue
            self._in_flight[tenant] += 1
            self._busy_checks.add(ping.lane_check)
            self._waiting -= 1
            if not self._lanes[tenant]:
                del self._lanes[tenant]
                self._turn.remove(tenant)
            return ping
        return None

    def _first_free(self, lane: deque[P]) -> P | None:
        """Remove and return the oldest ping whose check has nothing in flight and no older
        ping waiting (so a check's pings keep their order)."""
        seen: set[Hashable] = set()
        for index, ping in enumerate(lane):
            check = ping.lane_check
            if check not in self._busy_checks and check not in seen:
                del lane[index]
                return ping
            seen.add(check)
        return None
