"""docs/events.md, "Endpoints: the settings": ``SCHEDULER_EVENT_TENANT_CONCURRENCY`` bounds the
deliveries in flight per tenant, "one tenant's slow endpoint cannot take every slot". Attacked
as a tenant with a hanging receiver and a backlog would: its events are older than the other
tenant's and more numerous than a round's search, and they are spread over two endpoints whose
own ``concurrency`` would let them take every slot of the process. While its requests hang the
other tenant's events are delivered, and it never has more than its share in flight."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.test import override_settings

from scheduler_app.clock import FakeClock
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.webhooks.loop import DeliveryLoop
from tests.integration.event_receiver import SECRET, Receiver, receiving
from tests.integration.support import START
from tests.integration.test_events import Holding, beat, event_schedule, receiver

pytestmark = pytest.mark.django_db
__all__ = ["receiver"]  # fixtures

SLOTS = 4
"""``SCHEDULER_EVENT_CONCURRENCY``: the process's delivery slots."""
SHARE = 2
"""``SCHEDULER_EVENT_TENANT_CONCURRENCY``."""
BACKLOG = 4 * SLOTS + 4
"""The slow tenant's events: more than one round's search reads (four per free slot)."""


class Counting(Holding):
    """A hanging receiver that counts the requests it holds at once."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived = threading.Condition()
        self.holding = 0
        self.most = 0
        self.arrivals = 0

    def receive(
        self,
        headers: dict[str, str],
        body: bytes,
        answer: tuple[int, dict[str, str]] | None = None,
    ) -> tuple[int, dict[str, str]]:
        with self.arrived:
            self.holding += 1
            self.arrivals += 1
            self.most = max(self.most, self.holding)
            self.arrived.notify_all()
        try:
            return super().receive(headers, body, answer)
        finally:
            with self.arrived:
                self.holding -= 1


@pytest.fixture
def slow() -> Iterator[Counting]:
    hanging = Counting()
    with receiving(hanging):
        try:
            yield hanging
        finally:
            hanging.release.set()


def states(tenant: str) -> dict[str, int]:
    rows = Occurrence.objects.filter(schedule__tenant=tenant)
    found: dict[str, int] = {}
    for state in rows.values_list("state", flat=True):
        found[state] = found.get(state, 0) + 1
    return found


def acme_in_flight(loop: DeliveryLoop) -> int:
    return sum(1 for a in loop.deliverer.in_flight.values() if a.candidate.tenant == "acme")


def test_a_tenants_hanging_endpoints_leave_the_other_tenants_events_their_slots(
    slow: Counting, receiver: Receiver
) -> None:
    endpoints = {
        name: {"url": slow.url, "secrets": [SECRET], "tenants": ["acme"], "concurrency": SLOTS}
        for name in ("acme-1", "acme-2")
    }
    endpoints["globex"] = {"url": receiver.url, "secrets": [SECRET], "tenants": ["globex"]}
    clock = FakeClock(START)
    with override_settings(
        SCHEDULER_EVENT_ENDPOINTS=endpoints,
        SCHEDULER_EVENT_ALLOWED_HOSTS=("127.0.0.1",),
        SCHEDULER_EVENT_CONCURRENCY=SLOTS,
        SCHEDULER_EVENT_TENANT_CONCURRENCY=SHARE,
    ):
        for n in range(BACKLOG):
            endpoint = f"acme-{n % 2 + 1}"
            event_schedule(clock, name=f"a{n}", tenant="acme", options={"endpoint": endpoint})
        clock.advance(timedelta(minutes=1))  # the other tenant's slots come after the backlog
        made = [
            event_schedule(clock, name=f"g{n}", tenant="globex", options={"endpoint": "globex"})
            for n in range(3)
        ]
        clock.set(max(target.next_run_at for target in made if target.next_run_at))
        beat(clock).tick()
        oldest_globex = Occurrence.objects.filter(schedule__tenant="globex").order_by("not_before")
        newest_acme = Occurrence.objects.filter(schedule__tenant="acme").order_by("-not_before")
        assert newest_acme[0].not_before < oldest_globex[0].not_before
        assert states("acme") == {OccurrenceState.PENDING: BACKLOG}

        loop = DeliveryLoop(clock=clock)
        most_in_flight = 0
        for _ in range(50):  # rounds while acme's requests hang
            loop.step(wait=0.05)
            most_in_flight = max(most_in_flight, acme_in_flight(loop))
            if states("globex") == {OccurrenceState.SUCCEEDED: 3}:
                break
        assert states("globex") == {OccurrenceState.SUCCEEDED: 3}
        assert len(receiver.accepted) == 3
        with slow.arrived:  # acme's requests reach its receiver and hang there
            assert slow.arrived.wait_for(lambda: slow.arrivals >= SHARE, timeout=10)
        for _ in range(5):  # more rounds: acme's share is still taken
            loop.step(wait=0.05)
            most_in_flight = max(most_in_flight, acme_in_flight(loop))
        assert most_in_flight == SHARE
        assert states("acme")[OccurrenceState.RUNNING] == SHARE
        assert (slow.arrivals, slow.most) == (SHARE, SHARE)

        slow.release.set()  # the endpoint recovers: the backlog goes out, a share at a time
        for _ in range(10 * BACKLOG):
            loop.step(wait=0.05)
            most_in_flight = max(most_in_flight, acme_in_flight(loop))
            if states("acme") == {OccurrenceState.SUCCEEDED: BACKLOG}:
                break
        loop.drain()
        loop.pool.shutdown()
    assert states("acme") == {OccurrenceState.SUCCEEDED: BACKLOG}
    assert most_in_flight == SHARE
    assert slow.most <= SHARE
    assert slow.arrivals == BACKLOG
