"""HTTP to an address that was checked: pings and event deliveries.

Where a request goes is checked when it is sent, not only when its URL was stored
(``addresses``): every address the host resolves to must be public and the port 80 or 443
unless the host is listed in the allowed hosts, and the connection is made to the address that
was checked, so that a second, different DNS answer (rebinding) cannot send it elsewhere. One
deadline covers resolving, connecting, sending and reading (a server that answers byte by byte
cannot stretch it). ``user:password@`` in the URL is sent as Basic auth.
"""

from __future__ import annotations

import base64
import http.client
import socket
import ssl
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from scheduler_app.observability.addresses import (
    MAX_ADDRESSES,
    Deadline,
    addresses,
    checked_addresses,
)
from scheduler_app.observability.urls import check_ping_url

USER_AGENT = "django-durable-scheduler"
READ_LIMIT = 4_096
"""Bytes of an answer's body read at most."""


class _DeadlineSocket(socket.socket):
    """A TCP socket whose every send and receive waits at most until the ping's deadline (a
    server that answers byte by byte cannot stretch it)."""

    deadline: Deadline

    def recv_into(self, *args: Any, **kwargs: Any) -> int:
        self.settimeout(self.deadline.remaining())
        return super().recv_into(*args, **kwargs)

    def sendall(self, *args: Any, **kwargs: Any) -> None:
        self.settimeout(self.deadline.remaining())
        super().sendall(*args, **kwargs)


class _DeadlineSSLSocket(_DeadlineSocket, ssl.SSLSocket):
    """The same once TLS wraps it (the methods above come before ``SSLSocket``'s)."""


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

    def connect(self) -> None:
        context = ssl.create_default_context()
        context.sslsocket_class = _DeadlineSSLSocket
        sock = _connect(self.address, self.port, self.deadline)
        sock.settimeout(self.deadline.remaining())  # the handshake, as a whole
        try:
            wrapped = context.wrap_socket(
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


@dataclass(frozen=True)
class Answer:
    """What the server answered: its status, its headers and at most ``READ_LIMIT`` bytes."""

    status: int
    headers: Mapping[str, str]
    """Header names in lower case."""
    body: bytes = b""


def exchange(
    url: str,
    *,
    method: str = "GET",
    body: bytes | None = None,
    extra_headers: Mapping[str, str] | None = None,
    timeout: float,
    allowed_hosts: Collection[str] = (),
    check_address: bool = True,
    monotonic: Callable[[], float] = time.monotonic,
    tenant: str | None = None,
) -> Answer:
    """Send one request to ``url`` (checked as the module says) and read the answer.
    ``timeout`` is the whole request's: resolving, connecting to at most two addresses,
    sending and reading. ``tenant``'s resolutions count against its share
    (``addresses.TENANT_RESOLVERS``). Redirects are not followed."""
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
    if parts.query:
        path = f"{path}?{parts.query}"
    error: OSError | None = None
    for address in candidates:
        kind = _PinnedHTTPS if https else _PinnedHTTP
        connection = kind(host, port, address=address, deadline=deadline)
        try:
            connection.request(
                method, path, body=body, headers={**headers(url), **(extra_headers or {})}
            )
            response = connection.getresponse()
            read = response.read(READ_LIMIT)
            found = {name.lower(): value for name, value in response.getheaders()}
            return Answer(response.status, found, read)
        except OSError as exc:  # connection refused or timed out: the next address, if time is left
            error = exc
        finally:
            connection.close()
    raise error or OSError(f"{host} has no address")


def request(url: str, **options: Any) -> int:
    """GET ``url`` (``exchange``, with its options); the response's status code."""
    return exchange(url, **options).status
