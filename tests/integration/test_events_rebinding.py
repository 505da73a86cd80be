"""docs/events.md, "Where a request may go": every address the endpoint's host resolves to must
be public, and "the connection is made to the address that was checked (a second DNS answer
cannot send it elsewhere)". Attacked as a rebinding name server would: the endpoint's host
answers a public address the first time it is asked and a loopback, private or cloud-metadata
address every time after. A delivery must connect only to the public address it checked, and
the internal service behind the second answer must never see a connection, let alone the
signed event.

The network is faked at the lowest seams the code uses, ``socket.getaddrinfo`` and the
socket's ``connect``: the public address is routed to a local receiver (there is no internet
here), the second answer to another local receiver, the "internal service"."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.test import override_settings

from scheduler_app.clock import FakeClock
from scheduler_app.models import OccurrenceState
from scheduler_app.webhooks.loop import DeliveryLoop
from tests.integration.event_receiver import SECRET, Receiver, receiving
from tests.integration.support import START
from tests.integration.test_events import deliver, due, receiver, stored

pytestmark = pytest.mark.django_db
__all__ = ["receiver"]  # fixtures

HOST = "hooks.example"
PUBLIC = "93.184.215.14"
"""The first answer: a public address (never reached: routed to a local receiver)."""


@dataclass
class Network:
    """The fake resolver and router: ``HOST`` resolves to ``PUBLIC`` once, then to
    ``rebound``; a connection to either on port 80 or 443 goes to its local receiver."""

    rebound: str
    routes: dict[str, int]
    """Address -> the local port it reaches."""
    answers: list[str] = field(default_factory=list)
    """What the resolver answered for ``HOST``, in turn."""
    connects: list[str] = field(default_factory=list)
    """Every address a connection to port 80 or 443 was made to."""

    def getaddrinfo(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if str(host).lower() != HOST:
            return REAL_GETADDRINFO(host, port, *args, **kwargs)
        address = self.rebound if self.answers else PUBLIC
        self.answers.append(address)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port or 0)))]

    def connect(self, sock: socket.socket, address: Any) -> None:
        host, port = address[0], address[1]
        if port not in (80, 443):  # not the endpoint's (the test's own sockets)
            return REAL_CONNECT(sock, address)
        self.connects.append(host)
        if host not in self.routes:
            raise ConnectionRefusedError(f"nothing listens at {host}:{port}")
        return REAL_CONNECT(sock, ("127.0.0.1", self.routes[host]))


REAL_GETADDRINFO = socket.getaddrinfo
REAL_CONNECT = socket.socket.connect


@pytest.fixture
def internal() -> Iterator[Receiver]:
    """The service behind the second answer; it holds the endpoint's secret too (the worst
    case: it would verify and act on the event)."""
    with receiving(Receiver()) as running:
        yield running


@pytest.fixture(params=["127.0.0.1", "10.0.0.7", "169.254.169.254"])
def network(
    request: pytest.FixtureRequest,
    receiver: Receiver,
    internal: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> Network:
    rebound = request.param
    fake = Network(rebound, {PUBLIC: receiver.port, rebound: internal.port})
    monkeypatch.setattr(socket, "getaddrinfo", fake.getaddrinfo)

    def connect(sock: socket.socket, address: Any) -> None:  # a function: bound as a method
        fake.connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return fake


def test_a_second_dns_answer_does_not_take_the_delivery_elsewhere(
    network: Network, receiver: Receiver, internal: Receiver
) -> None:
    clock = FakeClock(START)
    with override_settings(
        SCHEDULER_EVENT_ENDPOINTS={"billing": {"url": f"http://{HOST}/hooks", "secrets": [SECRET]}}
    ):
        row = due(clock)
        loop = DeliveryLoop(clock=clock)
        deliver(loop)
        assert stored(row).state == OccurrenceState.SUCCEEDED
        assert network.answers[0] == PUBLIC
        assert network.connects == [PUBLIC]
        [request] = receiver.requests
        assert request["headers"]["host"] == HOST
        assert list(receiver.accepted) == [str(row.pk)]

        # The next delivery asks again and is given the internal address: refused, unsent.
        later = due(clock, name="later")
        deliver(loop)
        loop.pool.shutdown()
    refused = stored(later)
    assert (refused.state, refused.reason) == (OccurrenceState.FAILED, "endpoint_refused")
    assert network.answers[-1] == network.rebound
    assert network.connects == [PUBLIC]
    assert internal.requests == []


def test_a_second_dns_answer_does_not_take_a_tls_connection_elsewhere(
    network: Network, internal: Receiver
) -> None:
    """The same over HTTPS (its own connect path; the local receiver speaks no TLS, so the
    delivery fails after connecting: where it connected is what is checked)."""
    clock = FakeClock(START)
    with override_settings(
        SCHEDULER_EVENT_ENDPOINTS={"billing": {"url": f"https://{HOST}/hooks", "secrets": [SECRET]}}
    ):
        row = due(clock)
        loop = DeliveryLoop(clock=clock)
        deliver(loop)
        loop.pool.shutdown()
    assert stored(row).state == OccurrenceState.RETRYING
    assert network.answers[0] == PUBLIC
    assert network.connects == [PUBLIC]
    assert internal.requests == []
