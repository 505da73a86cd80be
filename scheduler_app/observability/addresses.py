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
may be stuck at once per process, and at most ``TENANT_RESOLVERS`` of one tenant's; past that
a ping fails at once instead of adding a thread (a tenant whose names hang cannot take the
resolutions of the others).
"""

from __future__ import annotations

import ipaddress
import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from scheduler_app.observability.urls import PORTS

MAX_ADDRESSES = 2
"""Addresses tried per ping: a name with many silent addresses costs no more than two."""
RESOLVERS = 8
"""Resolutions that may run at once per process (each on its own daemon thread)."""
TENANT_RESOLVERS = 2
"""Resolutions one tenant's pings may hold at once (the beat's own ping, ``tenant=None``, is
held only to ``RESOLVERS``)."""

NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")
"""RFC 6052's well-known NAT64 prefix: the IPv4 address is the last 32 bits."""
NAT64_LOCAL_USE = ipaddress.ip_network("64:ff9b:1::/48")
"""RFC 8215's local-use NAT64 prefix: a translator's own prefix of /48 to /96 within it, so
the IPv4 address may sit at any of RFC 6052's positions from bit 48 on."""
SIIT_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")
"""RFC 2765's IPv4-translated addresses (SIIT, ``::ffff:0:a.b.c.d``): the last 32 bits."""
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
"""Deprecated IPv4-compatible addresses (``::a.b.c.d``): the last 32 bits."""
RFC6052_LENGTHS = (48, 56, 64, 96)
"""The RFC 6052 prefix lengths a local-use NAT64 prefix (a /48) can be extended to."""
ISATAP_IDS = (0x0000_5EFE, 0x0200_5EFE)
"""ISATAP's interface identifiers (RFC 5214): ``…:0:5efe:a.b.c.d`` under any /64."""
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


def rfc6052_ipv4(ip: ipaddress.IPv6Address, length: int) -> ipaddress.IPv4Address:
    """The IPv4 address at RFC 6052's place for a prefix of ``length`` bits: the 32 bits
    after the prefix, skipping bits 64-71 (the "u" octet, always zero) when they cross it."""
    value = int(ip)
    if length == 96:
        return ipaddress.IPv4Address(value & 0xFFFF_FFFF)
    without_u = ((value >> 64) << 56) | (value & ((1 << 56) - 1))
    return ipaddress.IPv4Address((without_u >> (120 - length - 32)) & 0xFFFF_FFFF)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address an IPv6 address may carry to a translator or tunnel: IPv4-mapped,
    IPv4-compatible, SIIT-translated, NAT64 (well-known and every layout of the local-use
    prefix), 6to4, Teredo (server and client) and ISATAP. A form that can be read in several
    ways gives every reading: the address is refused if any of them is not public."""
    found: list[ipaddress.IPv4Address] = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    if any(ip in net for net in (IPV4_COMPATIBLE, SIIT_TRANSLATED, NAT64_WELL_KNOWN)):
        found.append(rfc6052_ipv4(ip, 96))
    if ip in NAT64_LOCAL_USE:
        found.extend(rfc6052_ipv4(ip, length) for length in RFC6052_LENGTHS)
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    if (int(ip) >> 32) & 0xFFFF_FFFF in ISATAP_IDS:
        found.append(rfc6052_ipv4(ip, 96))
    return found


TRANSLATION_PREFIXES = (
    ipaddress.ip_network("::ffff:0:0/96"),  # IPv4-mapped
    SIIT_TRANSLATED,
    IPV4_COMPATIBLE,
    NAT64_WELL_KNOWN,
    NAT64_LOCAL_USE,
    ipaddress.ip_network("2002::/16"),  # 6to4
    ipaddress.ip_network("2001::/32"),  # Teredo
)
"""Prefixes whose packets go to the IPv4 address they carry (a translator or a tunnel)."""


def forbidden(address: str) -> bool:
    """Whether an IP address is one a schedule must not make a worker request."""
    ip: Address = ipaddress.ip_address(address.split("%", 1)[0])
    candidates: list[Address] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.is_site_local:
            return True
        embedded = embedded_ipv4(ip)
        if embedded and any(ip in prefix for prefix in TRANSLATION_PREFIXES):
            # A translation prefix is judged by the IPv4 address it carries: Python's own
            # verdict on the prefix differs between versions (3.13 calls 6to4 not global).
            candidates = list(embedded)
        else:  # e.g. an ISATAP-style ending under any prefix: both must be public
            candidates.extend(embedded)
    return any(not each.is_global or each.is_multicast for each in candidates)


class TenantShares:
    """How many resolutions each tenant holds; ``take`` refuses one past ``limit``
    (``tenant=None``, the deployment's own ping, is not counted)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._held: Counter[str] = Counter()

    def take(self, tenant: str | None, host: str) -> None:
        if tenant is None:
            return
        with self._lock:
            if self._held[tenant] >= self.limit:
                raise TimeoutError(
                    f"resolving {host}: {self.limit} resolutions of tenant {tenant!r} already "
                    "hang (its share; other tenants' pings are not held up)"
                )
            self._held[tenant] += 1

    def give_back(self, tenant: str | None) -> None:
        if tenant is None:
            return
        with self._lock:
            self._held[tenant] -= 1
            if self._held[tenant] <= 0:
                del self._held[tenant]


class _Resolver:
    """``getaddrinfo`` on daemon threads, waited for until a deadline (fresh after a fork)."""

    def __init__(self) -> None:
        self._forget_parent()
        os.register_at_fork(after_in_child=self._forget_parent)

    def _forget_parent(self) -> None:
        self._slots = threading.BoundedSemaphore(RESOLVERS)
        self._shares = TenantShares(TENANT_RESOLVERS)

    def resolve(
        self, host: str, port: int, deadline: Deadline, tenant: str | None = None
    ) -> list[str]:
        slots, shares = self._slots, self._shares
        wait = deadline.remaining()  # before taking a share: a spent deadline takes none
        shares.take(tenant, host)
        if not slots.acquire(timeout=wait):
            shares.give_back(tenant)
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
                shares.give_back(tenant)
                done.set()

        threading.Thread(target=run, name="scheduler-ping-resolve", daemon=True).start()
        if not done.wait(deadline.remaining()):
            raise TimeoutError(f"resolving {host} took longer than the ping's timeout")
        [result] = answer
        if isinstance(result, OSError):
            raise result
        return list(dict.fromkeys(str(sockaddr[0]) for *_, sockaddr in result))  # no repeats


resolver = _Resolver()


def addresses(
    host: str, port: int, deadline: Deadline | None = None, *, tenant: str | None = None
) -> list[str]:
    """The addresses ``host`` resolves to now, in the resolver's order (within ``deadline``;
    ``tenant``'s resolutions held to its share)."""
    return resolver.resolve(host, port, deadline or Deadline(30.0), tenant)


def check_port(host: str, port: int, allowed_hosts: Collection[str]) -> None:
    """``PingRefused`` for a port other than 80 and 443 on a host that is not allowed."""
    if port not in PORTS and host.lower() not in allowed_hosts:
        raise PingRefused(
            f"port {port} of {host} is refused: a schedule's ping may use ports 80 and 443; "
            "add the host to SCHEDULER_PING_ALLOWED_HOSTS if it is meant to be pinged"
        )


def checked_addresses(
    host: str,
    port: int,
    allowed_hosts: Collection[str],
    deadline: Deadline | None = None,
    *,
    tenant: str | None = None,
) -> list[str]:
    """The addresses to connect to (at most ``MAX_ADDRESSES``); ``PingRefused`` if the port
    is not allowed or one address is not public and the host is not allowed (every address is
    checked: a name with one private answer is refused)."""
    check_port(host, port, allowed_hosts)
    resolved = addresses(host, port, deadline, tenant=tenant)
    if host.lower() in allowed_hosts:
        return resolved[:MAX_ADDRESSES]
    bad = [address for address in resolved if forbidden(address)]
    if bad:
        raise PingRefused(
            f"{host} resolves to {', '.join(bad)}, a private, loopback or link-local address; "
            "add the host to SCHEDULER_PING_ALLOWED_HOSTS if it is meant to be pinged"
        )
    return resolved[:MAX_ADDRESSES]
