"""Healthchecks-style pings, sent off the task's thread after the outcome is committed.

A ping never fails a run and never holds it up: ``ping`` queues the request when the
transaction commits (``transaction.on_commit``) and returns; a small pool of daemon threads
sends it. ``SCHEDULER_PING_TIMEOUT`` is one deadline for the whole ping: resolving the host,
connecting (to at most two of its addresses), sending and reading.

Pings wait in one lane per tenant (``lanes``), served in turn, and one tenant's pings hold at
most ``lanes.TENANT_SENDERS`` of the ``THREADS`` senders and ``addresses.TENANT_RESOLVERS``
name resolutions: a tenant whose endpoints hang delays only its own pings. A full lane drops
that tenant's new ping (logged).

Where the request goes is checked when it is sent, not only when the URL was stored
(``addresses``): every address the host resolves to must be public and the port 80 or 443
unless the host is listed in ``SCHEDULER_PING_ALLOWED_HOSTS``, and the connection is made to
the address that was checked, so that a second, different DNS answer (rebinding) cannot send
it elsewhere. ``user:password@`` in the URL is sent as Basic auth.
"""

from __future__ import annotations

import base64
import http.client
import logging
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import unquote, urlsplit

from django.db import transaction

from scheduler_app.conf import get_settings
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.observability.addresses import (
    MAX_ADDRESSES,
    Deadline,
    PingRefused,
    addresses,
    checked_addresses,
)
from scheduler_app.observability.lanes import Lanes
from scheduler_app.observability.urls import check_ping_url, with_suffix

logger = logging.getLogger("scheduler_app.pings")

THREADS = 4
"""Sender threads per process (one tenant holds at most ``lanes.TENANT_SENDERS`` of them)."""
USER_AGENT = "django-durable-scheduler"
READ_LIMIT = 4_096


@dataclass(frozen=True)
class Ping:
    url: str
    check_address: bool = True
    """False for the beat's own ping, which the operator configured in the settings."""
    check: str = ""
    """The check pinged (the URL without suffix): its pings are sent in order, one at a time."""
    tenant: str | None = None
    """The schedule's tenant: its lane and its share of threads and resolutions. None for the
    beat's own ping (a lane of its own)."""

    @property
    def lane_check(self) -> str:
        return self.check or self.url


class _DeadlineSocket(socket.socket):
    """A TCP socket whose every send and receive waits at most until the ping's deadline (a
    server that answers byte by byte cannot stretch it)."""

    deadline: Deadline

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        self.settimeout(self.deadline.remaining())
        return super().recv_into(buffer, nbytes, flags)

    def sendall(self, data: Any, flags: int = 0) -> None:
        self.settimeout(self.deadline.remaining())
        super().sendall(data, flags)


class _DeadlineSSLSocket(ssl.SSLSocket):
    """The same once TLS wraps it."""

    deadline: Deadline

    def recv_into(self, buffer: Any, nbytes: int | None = None, flags: int = 0) -> int:
        self.settimeout(self.deadline.remaining())
        return super().recv_into(buffer, nbytes, flags)

    def sendall(self, data: Any, flags: int = 0) -> None:
        self.settimeout(self.deadline.remaining())
        super().sendall(data, flags)


def _connect(address: str, port: int, deadline: Deadline) -> _DeadlineSocket:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = _DeadlineSocket(family, socket.SOCK_STREAM)
    sock.deadline = deadline
    try:
        sock.settimeout(deadline.remaining())
        sock.connect((address, port))
    except BaseException:
        sock.close()
        raise
    return sock


class _PinnedHTTP(http.client.HTTPConnection):
    """An HTTP connection to a checked address, with the URL's host in the ``Host`` header;
    connecting, sending and reading share the ping's deadline."""

    def __init__(self, host: str, port: int, *, address: str, deadline: Deadline) -> None:
        super().__init__(host, port, timeout=deadline.seconds)
        self.address = address
        self.deadline = deadline

    def connect(self) -> None:
        self.sock = _connect(self.address, self.port, self.deadline)


class _PinnedHTTPS(_PinnedHTTP):
    """The same for HTTPS; the certificate is verified against the URL's host name."""

    def __init__(self, host: str, port: int, *, address: str, deadline: Deadline) -> None:
        super().__init__(host, port, address=address, deadline=deadline)
        self.pinned_context = ssl.create_default_context()
        self.pinned_context.sslsocket_class = _DeadlineSSLSocket

    def connect(self) -> None:
        sock = _connect(self.address, self.port, self.deadline)
        sock.settimeout(self.deadline.remaining())  # the handshake, as a whole
        try:
            wrapped = self.pinned_context.wrap_socket(
                sock, server_hostname=self.host, do_handshake_on_connect=False
            )
        except BaseException:
            sock.close()
            raise
        wrapped.deadline = self.deadline  # type: ignore[attr-defined]
        self.sock = wrapped
        wrapped.do_handshake()


def headers(url: str) -> dict[str, str]:
    """The request's headers: the user agent, and Basic auth for ``user:password@`` in the URL
    (accepted only with ``SCHEDULER_PING_ALLOW_CREDENTIALS``)."""
    parts = urlsplit(url)
    found = {"User-Agent": USER_AGENT}
    if parts.username or parts.password:  # as check_ping_url reads them: "@host" has none
        pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        found["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    return found


def request(
    url: str,
    *,
    timeout: float,
    allowed_hosts: Collection[str] = (),
    check_address: bool = True,
    monotonic: Callable[[], float] = time.monotonic,
    tenant: str | None = None,
) -> int:
    """GET ``url`` (checked as the module says); the response's status code. ``timeout`` is
    the whole ping's: resolving, connecting to at most two addresses, sending and reading.
    ``tenant``'s resolutions count against its share (``addresses.TENANT_RESOLVERS``)."""
    check_ping_url(url, allow_credentials=True)  # a row stored past the services, too
    deadline = Deadline(timeout, monotonic)
    parts = urlsplit(url)
    host = parts.hostname or ""
    https = parts.scheme.lower() == "https"
    port = parts.port or (443 if https else 80)
    allowed = {name.lower() for name in allowed_hosts}
    if check_address:
        candidates = checked_addresses(host, port, allowed, deadline, tenant=tenant)
    else:
        candidates = addresses(host, port, deadline, tenant=tenant)[:MAX_ADDRESSES]
    path = parts.path or "/"
    error: OSError | None = None
    for address in candidates:
        kind = _PinnedHTTPS if https else _PinnedHTTP
        connection = kind(host, port, address=address, deadline=deadline)
        try:
            connection.request("GET", path, headers=headers(url))
            response = connection.getresponse()
            response.read(READ_LIMIT)
            return response.status
        except OSError as exc:  # connection refused or timed out: the next address, if time is left
            error = exc
        finally:
            connection.close()
    raise error or OSError(f"{host} has no address")


class Sender:
    """A few daemon threads per process serving the tenants' lanes in turn (``lanes``;
    started again after a fork). The pings of one check are sent one at a time, in the order
    they were made (``/start`` before the success)."""

    def __init__(self, send: Callable[[Ping], None] | None = None) -> None:
        self.send_one = send or deliver
        self._lanes: Lanes[Ping] = Lanes()
        self._pid = 0
        self._lock = threading.Lock()
        self._idle = threading.Condition()
        self._open = 0
        # A prefork child starts with none of the parent's threads, and with its locks in
        # whatever state a parent thread left them: fresh ones, and threads on first use.
        os.register_at_fork(after_in_child=self._forget_parent)

    def _forget_parent(self) -> None:
        self._lanes = Lanes()
        self._pid = 0
        self._lock = threading.Lock()
        self._idle = threading.Condition()
        self._open = 0

    def send(self, ping: Ping) -> None:
        self._start()
        with self._idle:
            self._open += 1
        if not self._lanes.put(ping):
            self._done()
            logger.warning(
                "ping dropped: too many waiting for its tenant",
                extra={"action": "ping.dropped", "url": _safe(ping.url), "tenant": ping.tenant},
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
            for number in range(THREADS):
                threading.Thread(
                    target=self._work,
                    args=(self._lanes,),
                    name=f"scheduler-ping-{number}",
                    daemon=True,
                ).start()
            self._pid = os.getpid()

    def _work(self, lanes: Lanes[Ping]) -> None:
        while True:
            ping = lanes.take()
            try:
                self.send_one(ping)
            finally:
                lanes.done(ping)
                self._done()

    def _done(self) -> None:
        with self._idle:
            self._open -= 1
            self._idle.notify_all()


def deliver(ping: Ping) -> None:
    """Send one ping now (on a sender thread); log what went wrong, never raise."""
    settings = get_settings()
    try:
        status = request(
            ping.url,
            timeout=settings.PING_TIMEOUT,
            allowed_hosts=settings.PING_ALLOWED_HOSTS,
            check_address=ping.check_address,
            tenant=ping.tenant,
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


def ping(
    url: str, suffix: str = "", *, check_address: bool = True, tenant: str | None = None
) -> None:
    """Queue ``<url>/<suffix>`` in ``tenant``'s lane once the current transaction commits (at
    once outside one)."""
    if url:
        message = Ping(with_suffix(url, suffix), check_address, check=url, tenant=tenant)
        transaction.on_commit(partial(sender.send, message))
