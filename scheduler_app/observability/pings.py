"""Healthchecks-style pings, sent off the task's thread after the outcome is committed.

A ping never fails a run and never holds it up: ``ping`` queues the request when the
transaction commits (``transaction.on_commit``) and returns; a small pool of daemon threads
sends it with ``SCHEDULER_PING_TIMEOUT``. A full queue drops the ping (logged).

Where the request goes is checked when it is sent, not only when the URL was stored: the
host name is resolved, every address it resolves to must be public (not private, loopback,
link-local, multicast, reserved...) unless the host is listed in
``SCHEDULER_PING_ALLOWED_HOSTS``, and the connection is made to the address that was checked,
so that a second, different DNS answer (rebinding) cannot send it elsewhere.
"""

from __future__ import annotations

import http.client
import ipaddress
import logging
import os
import queue
import socket
import ssl
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import partial
from urllib.parse import urlsplit

from django.db import transaction

from scheduler_app.conf import get_settings
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.observability.urls import check_ping_url, with_suffix

logger = logging.getLogger("scheduler_app.pings")

QUEUE_SIZE = 1_000
"""Pings waiting to be sent per process; past it new ones are dropped."""
THREADS = 2
USER_AGENT = "django-durable-scheduler"
READ_LIMIT = 4_096


class PingRefused(Exception):
    """The URL leads to an address workers must not reach (see the module's docstring)."""


@dataclass(frozen=True)
class Ping:
    url: str
    check_address: bool = True
    """False for the beat's own ping, which the operator configured in the settings."""
    check: str = ""
    """The check pinged (the URL without suffix): its pings are sent in order, by one thread."""


def forbidden(address: str) -> bool:
    """Whether an IP address is one a schedule must not make a worker request."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not ip.is_global or ip.is_multicast


def addresses(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to now, in the resolver's order."""
    found: list[str] = []
    for *_, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        address = str(sockaddr[0])
        if address not in found:
            found.append(address)
    return found


def checked_addresses(host: str, port: int, allowed_hosts: Collection[str]) -> list[str]:
    """The addresses to connect to; ``PingRefused`` if one of them is not public and the host
    is not allowed (every address is checked: a name with one private answer is refused)."""
    resolved = addresses(host, port)
    if host.lower() in allowed_hosts:
        return resolved
    bad = [address for address in resolved if forbidden(address)]
    if bad:
        raise PingRefused(
            f"{host} resolves to {', '.join(bad)}, a private, loopback or link-local address; "
            "add the host to SCHEDULER_PING_ALLOWED_HOSTS if it is meant to be pinged"
        )
    return resolved


class _PinnedHTTP(http.client.HTTPConnection):
    """An HTTP connection to a checked address, with the URL's host in the ``Host`` header."""

    def __init__(self, host: str, port: int, *, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """The same for HTTPS; the certificate is verified against the URL's host name."""

    def __init__(self, host: str, port: int, *, address: str, timeout: float) -> None:
        self.pinned_context = ssl.create_default_context()
        super().__init__(host, port, timeout=timeout, context=self.pinned_context)
        self.address = address

    def connect(self) -> None:
        sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = self.pinned_context.wrap_socket(sock, server_hostname=self.host)


def request(
    url: str, *, timeout: float, allowed_hosts: Collection[str] = (), check_address: bool = True
) -> int:
    """GET ``url`` (checked as the module says); the response's status code."""
    check_ping_url(url, allow_credentials=True)  # a row stored past the services, too
    parts = urlsplit(url)
    host = parts.hostname or ""
    https = parts.scheme.lower() == "https"
    port = parts.port or (443 if https else 80)
    allowed = {name.lower() for name in allowed_hosts}
    candidates = checked_addresses(host, port, allowed) if check_address else addresses(host, port)
    path = parts.path or "/"
    error: OSError | None = None
    for address in candidates:
        kind = _PinnedHTTPS if https else _PinnedHTTP
        connection = kind(host, port, address=address, timeout=timeout)
        try:
            connection.request("GET", path, headers={"User-Agent": USER_AGENT})
            response = connection.getresponse()
            response.read(READ_LIMIT)
            return response.status
        except OSError as exc:  # connection refused or timed out: the next address
            error = exc
        finally:
            connection.close()
    raise error or OSError(f"{host} has no address")


class Sender:
    """A few daemon threads per process, each with a bounded queue (started again after a
    fork). The pings of one check always go to the same thread, so that they arrive in the
    order they were made (``/start`` before the success)."""

    def __init__(self, send: Callable[[Ping], None] | None = None) -> None:
        self.send_one = send or deliver
        self._queues = _queues()
        self._pid = 0
        self._lock = threading.Lock()
        self._idle = threading.Condition()
        self._open = 0
        # A prefork child starts with none of the parent's threads, and with its locks in
        # whatever state a parent thread left them: fresh ones, and threads on first use.
        os.register_at_fork(after_in_child=self._forget_parent)

    def _forget_parent(self) -> None:
        self._queues = _queues()
        self._pid = 0
        self._lock = threading.Lock()
        self._idle = threading.Condition()
        self._open = 0

    def send(self, ping: Ping) -> None:
        self._start()
        with self._idle:
            self._open += 1
        try:
            self._queues[hash(ping.check or ping.url) % THREADS].put_nowait(ping)
        except queue.Full:
            self._done()
            logger.warning(
                "ping dropped: too many waiting",
                extra={"action": "ping.dropped", "url": _safe(ping.url)},
            )

    def wait(self, timeout: float) -> bool:
        """Until every queued ping was sent or given up (tests and shutdown); False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._open == 0, timeout)

    def _start(self) -> None:
        if self._pid == os.getpid():
            return
        with self._lock:
            if self._pid == os.getpid():
                return
            for number, pings in enumerate(self._queues):
                threading.Thread(
                    target=self._work, args=(pings,), name=f"scheduler-ping-{number}", daemon=True
                ).start()
            self._pid = os.getpid()

    def _work(self, pings: queue.Queue[Ping]) -> None:
        while True:
            ping = pings.get()
            try:
                self.send_one(ping)
            finally:
                self._done()

    def _done(self) -> None:
        with self._idle:
            self._open -= 1
            self._idle.notify_all()


def _queues() -> list[queue.Queue[Ping]]:
    return [queue.Queue(QUEUE_SIZE // THREADS) for _ in range(THREADS)]


def deliver(ping: Ping) -> None:
    """Send one ping now (on a sender thread); log what went wrong, never raise."""
    settings = get_settings()
    try:
        status = request(
            ping.url,
            timeout=settings.PING_TIMEOUT,
            allowed_hosts=settings.PING_ALLOWED_HOSTS,
            check_address=ping.check_address,
        )
    except (PingRefused, ScheduleValidationError) as exc:
        logger.warning(
            "ping refused: %s", exc, extra={"action": "ping.refused", "url": _safe(ping.url)}
        )
        return
    except (OSError, http.client.HTTPException, ValueError) as exc:
        logger.warning(
            "ping failed: %s",
            f"{type(exc).__name__}: {exc}",
            extra={"action": "ping.failed", "url": _safe(ping.url)},
        )
        return
    if status >= 400:
        logger.warning(
            "ping answered %s",
            status,
            extra={"action": "ping.failed", "url": _safe(ping.url), "status": status},
        )
    else:
        logger.debug("ping sent", extra={"action": "ping.sent", "url": _safe(ping.url)})


def _safe(url: str) -> str:
    """The URL without credentials, for logs."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return parts._replace(netloc=netloc).geturl()
    return url


sender = Sender()
"""This process's sender (tests replace its ``send_one`` or wait on it)."""


def ping(url: str, suffix: str = "", *, check_address: bool = True) -> None:
    """Queue ``<url>/<suffix>`` once the current transaction commits (at once outside one)."""
    if url:
        message = Ping(with_suffix(url, suffix), check_address, check=url)
        transaction.on_commit(partial(sender.send, message))
