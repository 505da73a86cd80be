"""Healthchecks-style pings, sent off the task's thread after the outcome is committed.

A ping never fails a run and never holds it up: ``ping`` queues the request when the
transaction commits (``transaction.on_commit``) and returns; a small pool of daemon threads
sends it. ``SCHEDULER_PING_TIMEOUT`` is one deadline for the whole ping: resolving the host,
connecting (to at most two of its addresses), sending and reading.

Pings wait in one lane per tenant (``lanes``), served in turn, and one tenant's pings hold at
most ``lanes.TENANT_SENDERS`` of the ``THREADS`` senders and ``addresses.TENANT_RESOLVERS``
name resolutions: a tenant whose endpoints hang delays only its own pings. A full lane drops
that tenant's new ping (logged).

Where the request goes is checked when it is sent (``pinned``).
"""

from __future__ import annotations

import http.client
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from urllib.parse import urlsplit

from django.db import transaction

from scheduler_app.conf import get_settings
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.observability.addresses import PingRefused
from scheduler_app.observability.lanes import Lanes
from scheduler_app.observability.pinned import request
from scheduler_app.observability.urls import with_suffix

logger = logging.getLogger("scheduler_app.pings")

THREADS = 4
"""Sender threads per process (one tenant holds at most ``lanes.TENANT_SENDERS`` of them)."""


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


class Sender:
    """A few daemon threads per process serving the tenants' lanes in turn (``lanes``;
    started again after a fork). The pings of one check are sent one at a time, in the order
    they were made (``/start`` before the success)."""

    def __init__(self, send: Callable[[Ping], None] | None = None) -> None:
        self.send_one = send or deliver
        self._forget_parent()
        # A prefork child starts with none of the parent's threads, and with its locks in
        # whatever state a parent thread left them: fresh ones, and threads on first use.
        os.register_at_fork(after_in_child=self._forget_parent)

    def _forget_parent(self) -> None:
        self._lanes: Lanes[Ping] = Lanes()
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
