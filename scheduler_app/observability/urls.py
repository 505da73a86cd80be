"""Checking a ping URL when it is stored (``Schedule.ping_url``, ``SCHEDULER_BEAT_PING_URL``).

What can be checked without the network: the scheme, the length, the form, credentials. The
address a host name stands for is checked when the ping is sent (``pings``): a name may
resolve elsewhere tomorrow.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection
from typing import Any
from urllib.parse import SplitResult, urlsplit

from scheduler_app.errors import ScheduleValidationError
from scheduler_app.policies.limits import check_text

MAX_LENGTH = 500
"""Longest accepted ping URL, in characters (the column's length)."""
SCHEMES = ("http", "https")
PORTS = (80, 443)
"""The ports a schedule's ping may use unless its host is in ``SCHEDULER_PING_ALLOWED_HOSTS``."""
HIDDEN = ("Cc", "Cf")
"""Unicode categories refused: controls (C0, DEL, C1) and format characters (bidi overrides
such as U+202E, zero-width joiners, the BOM), which would make the URL read as another."""


def check_ping_url(
    value: Any,
    *,
    allow_credentials: bool = False,
    allowed_hosts: Collection[str] | None = None,
    field: str = "ping_url",
) -> str:
    """``value`` when it is an acceptable ping URL ("" for none); ``ScheduleValidationError``
    saying what is wrong and how to fix it otherwise. With ``allowed_hosts`` (a schedule's
    URL, not the operator's), a port other than 80 and 443 needs the host listed there."""
    if value is None or value == "":
        return ""
    _check_characters(value, field)
    parts, port, host = _split_url(value, field)
    if (
        allowed_hosts is not None
        and (port or 80) not in PORTS
        and host not in {name.lower() for name in allowed_hosts}
    ):
        raise ScheduleValidationError(
            field,
            f"port {port} is refused; a schedule's ping may use ports 80 and 443 (leave "
            f"the port out), or the operator adds {host!r} to SCHEDULER_PING_ALLOWED_HOSTS",
            code="port",
        )
    if (parts.username or parts.password) and not allow_credentials:
        raise ScheduleValidationError(
            field,
            "carries credentials (user:password@host); use the check's own secret URL "
            "(Healthchecks: https://hc-ping.com/<uuid>), or set "
            "SCHEDULER_PING_ALLOW_CREDENTIALS = True",
            code="credentials",
        )
    if parts.query or parts.fragment:
        raise ScheduleValidationError(
            field,
            "has a query or fragment; /start and /fail are appended to the path, so give "
            "the URL without ?... and #...",
            code="invalid",
        )
    return value


def _check_characters(value: Any, field: str) -> None:
    """Refuse a ping URL that is no string, is too long, or holds a space or a hidden character."""
    if not isinstance(value, str):
        raise ScheduleValidationError(
            field, f"must be a URL string, got {type(value).__name__}", code="invalid"
        )
    if len(value) > MAX_LENGTH:
        raise ScheduleValidationError(
            field, f"is {len(value)} characters long; at most {MAX_LENGTH}", code="too_long"
        )
    check_text(field, value)  # NUL, lone surrogates
    if any(character.isspace() or unicodedata.category(character) in HIDDEN for character in value):
        raise ScheduleValidationError(
            field,
            "contains spaces, control or invisible formatting characters (such as DEL or "
            "U+202E); remove them or percent-encode them",
            code="invalid",
        )


def _split_url(value: str, field: str) -> tuple[SplitResult, int | None, str]:
    """The parts, the port and the host (lower case) of a ping URL; one that is no http(s) URL
    with a host is refused."""
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        raise ScheduleValidationError(field, f"is not a URL ({exc})", code="invalid") from exc
    if parts.scheme.lower() not in SCHEMES:
        raise ScheduleValidationError(
            field,
            f"scheme {parts.scheme or '(none)'!r} is not allowed; use an http:// or https:// URL",
            code="invalid_scheme",
        )
    if not parts.hostname:
        raise ScheduleValidationError(
            field, "has no host; write it as https://host/path", code="invalid"
        )
    if port == 0:
        raise ScheduleValidationError(field, "port 0 is not a port", code="invalid")
    host = parts.hostname.lower()
    return parts, port, host


def with_suffix(url: str, suffix: str) -> str:
    """``<url>/<suffix>`` (Healthchecks.io's conventions), or ``url`` for no suffix."""
    return f"{url.rstrip('/')}/{suffix}" if suffix else url
