"""Fair pings (review 4, Medium): one tenant's hanging endpoints or names hold at most its
share of the sender threads and resolutions, so another tenant's ping goes out meanwhile.
The slow endpoint is a fake that blocks on an event: no test waits on the wall clock beyond a
few hundredths of a second."""

from __future__ import annotations

import socket
import threading
from typing import Any

import pytest

from scheduler_app.observability import addresses
from scheduler_app.observability.lanes import TENANT_SENDERS, Lanes
from scheduler_app.observability.pings import THREADS, Ping, Sender

A, B = "acme", "globex"


def ping(tenant: str | None, number: int, suffix: str = "") -> Ping:
    check = f"https://{tenant}.example/check{number}"
    return Ping(f"{check}/{suffix}" if suffix else check, check=check, tenant=tenant)


class SlowEndpoints:
    """``send`` for a ``Sender``: tenant A's endpoints hang until released; others answer."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.hanging = threading.Semaphore(0)
        self.sent: list[str] = []
        self.b_sent = threading.Event()

    def __call__(self, message: Ping) -> None:
        if message.tenant == A:
            self.hanging.release()
            assert self.release.wait(10), "the test never released tenant A's endpoints"
        self.sent.append(message.url)
        if message.tenant == B:
            self.b_sent.set()


def test_a_tenants_ping_is_sent_while_another_tenants_endpoints_hang() -> None:
    endpoints = SlowEndpoints()
    sender = Sender(endpoints)
    try:
        for number in range(20):  # far more hanging pings than there are threads
            sender.send(ping(A, number))
        for _ in range(TENANT_SENDERS):  # A holds its share of the threads...
            assert endpoints.hanging.acquire(timeout=5)
        sender.send(ping(B, 0))
        assert endpoints.b_sent.wait(5), "tenant B's ping waited for tenant A's endpoints"
        assert not endpoints.hanging.acquire(timeout=0.05)  # ...and no more than its share
    finally:
        endpoints.release.set()
    assert sender.wait(10)
    assert len(endpoints.sent) == 21


def test_one_tenant_never_holds_more_than_its_share_of_the_threads() -> None:
    assert TENANT_SENDERS < THREADS


def test_a_checks_pings_keep_their_order() -> None:
    lanes: Lanes[Ping] = Lanes(senders_per_tenant=4)
    start, done = ping(A, 1, "start"), ping(A, 1)
    other = ping(A, 2)
    for message in (start, done, other):
        assert lanes.put(message)
    assert lanes.take() == start
    assert lanes.take() == other  # the check's success waits for its /start
    lanes.done(start)
    assert lanes.take() == done


def test_lanes_are_served_in_turn() -> None:
    lanes: Lanes[Ping] = Lanes(senders_per_tenant=10)
    for number in range(3):
        lanes.put(ping(A, number))
    lanes.put(ping(B, 0))
    lanes.put(ping(None, 0))  # the beat's own ping: a lane of its own
    assert [lanes.take().tenant for _ in range(5)] == [A, B, None, A, A]


def test_a_full_lane_drops_only_its_tenants_pings() -> None:
    lanes: Lanes[Ping] = Lanes(per_tenant=2, size=10)
    assert lanes.put(ping(A, 0)) and lanes.put(ping(A, 1))
    assert not lanes.put(ping(A, 2))
    assert lanes.put(ping(B, 0))


def test_a_tenants_hanging_names_leave_resolutions_for_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()
    started: list[str] = []

    def getaddrinfo(name: str, *args: Any, **kwargs: Any) -> Any:
        started.append(name)
        if name.endswith(f".{A}.example"):
            release.wait(30)
            raise OSError("released")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", 443))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    resolver = addresses._Resolver()

    def short() -> addresses.Deadline:  # 0.02 s to wait, however slow the machine is
        return addresses.Deadline(0.02, monotonic=lambda: 0.0)

    try:
        for number in range(addresses.TENANT_RESOLVERS):
            with pytest.raises(TimeoutError, match="took longer"):
                resolver.resolve(f"n{number}.{A}.example", 443, short(), A)
        with pytest.raises(TimeoutError, match="tenant 'acme' already hang"):
            resolver.resolve(f"more.{A}.example", 443, short(), A)
        assert f"more.{A}.example" not in started  # no thread was started for it
        found = resolver.resolve("ok.globex.example", 443, addresses.Deadline(5), B)
        assert found == ["93.184.216.34"]
    finally:
        release.set()
