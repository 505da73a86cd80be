"""Where a ping may go: the host resolved within the ping's deadline, every address checked.

A schedule's ``ping_url`` is typed by whoever may edit a schedule; the worker that sends it
sits inside the network. So, unless the host is listed in ``SCHEDULER_PING_ALLOWED_HOSTS``:

- every address the host resolves to must be public: not private, loopback, link-local (the
  cloud metadata service), carrier-grade NAT, multicast, reserved or IPv6 site-local, and no
  IPv6 address that carries an IPv4 one (IPv4-mapped and -compatible, NAT64, 6to4, Teredo) may
  carry a forbidden one;
- the port must be 80 or 443.

Name resolution has no timeout of its own (``getaddrinfo``): it runs on a helper thread and
the sender waits for it at most until the ping's deadline; at most ``RESOLVERS`` resolutions
may be stuck at once per process, past that a ping fails at once instead of adding a thread.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from scheduler_app.observability.urls import PORTS

MAX_ADDRESSES = 2
"""Addresses tried per ping: a name with many silent addresses costs no more than two."""
RESOLVERS = 4
"""Resolutions that may run at once per process (each on its own daemon thread)."""

NAT64 = ipaddress.ip_network("64:ff9b::/96")
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class PingRefused(Exception):
    """The URL leads to an address or port workers must not reach (see the module's docstring)."""


@dataclass
class Deadline:
    """One ping's time budget: resolution, every connect and every read share it."""

    seconds: float
    monotonic: Callable[[], float] = time.monotonic
    ends: float = field(init=False)

    def __post_init__(self) -> None:
        self.ends = self.monotonic() + self.seconds

    def remaining(self) -> float:
        """Seconds left; ``TimeoutError`` once none are."""
        left = self.ends - self.monotonic()
        if left <= 0:
            raise TimeoutError(f"the ping's {self.seconds:g} s were used up")
        return left


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (mapped, compatible, NAT64, 6to4, Teredo)."""
    found: list[ipaddress.IPv4Address] = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    if ip in IPV4_COMPATIBLE or ip in NAT64:
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF))
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    return found


def forbidden(address: str) -> bool:
    """Whether an IP address is one a schedule must not make a worker request."""
    ip: Address = ipaddress.ip_address(address.split("%", 1)[0])
    candidates: list[Address] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.is_site_local:
            return True
        candidates.extend(embedded_ipv4(ip))
    return any(not each.is_global or each.is_multicast for each in candidates)


class _Resolver:
    """``getaddrinfo`` on daemon threads, waited for until a deadline (fresh after a fork)."""

    def __init__(self) -> None:
        self._slots = threading.BoundedSemaphore(RESOLVERS)
        os.register_at_fork(after_in_child=self._forget_parent)

    def _forget_parent(self) -> None:
        self._slots = threading.BoundedSemaphore(RESOLVERS)

    def resolve(self, host: str, port: int, deadline: Deadline) -> list[str]:
        slots = self._slots
        if not slots.acquire(timeout=deadline.remaining()):
            raise TimeoutError(f"resolving {host}: {RESOLVERS} resolutions already hang")
        answer: list[Any] = []
        done = threading.Event()

        def run() -> None:
            try:
                answer.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
            except OSError as exc:
                answer.append(exc)
            finally:
                slots.release()
                done.set()

        threading.Thread(target=run, name="scheduler-ping-resolve", daemon=True).start()
        if not done.wait(deadline.remaining()):
            raise TimeoutError(f"resolving {host} took longer than the ping's timeout")
        [result] = answer
        if isinstance(result, OSError):
            raise result
        found: list[str] = []
        for *_, sockaddr in result:
            address = str(sockaddr[0])
            if address not in found:
                found.append(address)
        return found


resolver = _Resolver()


def addresses(host: str, port: int, deadline: Deadline | None = None) -> list[str]:
    """The addresses ``host`` resolves to now, in the resolver's order (within ``deadline``)."""
    return resolver.resolve(host, port, deadline or Deadline(30.0))


def check_port(host: str, port: int, allowed_hosts: Collection[str]) -> None:
    """``PingRefused`` for a port other than 80 and 443 on a host that is not allowed."""
    if port not in PORTS and host.lower() not in allowed_hosts:
        raise PingRefused(
            f"port {port} of {host} is refused: a schedule's ping may use ports 80 and 443; "
            "add the host to SCHEDULER_PING_ALLOWED_HOSTS if it is meant to be pinged"
        )


def checked_addresses(
    host: str, port: int, allowed_hosts: Collection[str], deadline: Deadline | None = None
) -> list[str]:
    """The addresses to connect to (at most ``MAX_ADDRESSES``); ``PingRefused`` if the port
    is not allowed or one address is not public and the host is not allowed (every address is
    checked: a name with one private answer is refused)."""
    check_port(host, port, allowed_hosts)
    resolved = addresses(host, port, deadline)
    if host.lower() in allowed_hosts:
        return resolved[:MAX_ADDRESSES]
    bad = [address for address in resolved if forbidden(address)]
    if bad:
        raise PingRefused(
            f"{host} resolves to {', '.join(bad)}, a private, loopback or link-local address; "
            "add the host to SCHEDULER_PING_ALLOWED_HOSTS if it is meant to be pinged"
        )
    return resolved[:MAX_ADDRESSES]
