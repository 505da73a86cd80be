"""Where an event may go: the named endpoints of ``SCHEDULER_EVENT_ENDPOINTS`` (docs/events.md).

An event schedule names an endpoint in ``options.endpoint``; the URL and the signing secrets
live in the settings only, never in a schedule. A schedule cannot carry a URL of its own: a
signature must reach only the receiver whose secret made it (someone able to point a signed
event at their own server could replay it to the real receiver within its tolerance).

Checked when a schedule is written (the service layer, with its tenant: ``check_endpoint``)
and again before each delivery (``resolve``), so a row stored some other way, or settings
changed since, fail that occurrence alone with a message that says what to fix.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from scheduler_app.conf import get_settings
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.handoff.allowlist import event_type_of
from scheduler_app.observability.urls import check_ping_url

FIELD = "options.endpoint"
SECRET_PREFIX = "whsec_"
KEYS = frozenset({"url", "secrets", "tenants", "types", "concurrency"})
DEFAULT_CONCURRENCY = 4


class EndpointError(ScheduleValidationError):
    """An endpoint that is unknown, not this tenant's, not for this event type, or
    misconfigured in the settings."""


@dataclass(frozen=True)
class Endpoint:
    """One configured receiver."""

    name: str
    url: str
    secrets: tuple[str, ...]
    """Standard Webhooks secrets (``whsec_<base64>``); every one signs each delivery, so a
    receiver holding either the new or the old one accepts it while a secret is rotated."""
    tenants: tuple[str, ...] | None = None
    """The tenants whose schedules may use it; None: every tenant."""
    types: tuple[str, ...] | None = None
    """The event types (fnmatch patterns) it accepts; None: every type."""
    concurrency: int = DEFAULT_CONCURRENCY
    """Deliveries to it in flight at once, per delivery process."""

    def serves(self, tenant: str) -> bool:
        return self.tenants is None or tenant in self.tenants

    def accepts(self, event_type: str) -> bool:
        return self.types is None or any(fnmatchcase(event_type, p) for p in self.types)


def _misconfigured(name: str, problem: str) -> EndpointError:
    return EndpointError(
        FIELD,
        f"SCHEDULER_EVENT_ENDPOINTS[{name!r}] {problem}; fix the setting (docs/events.md)",
        code="endpoint_misconfigured",
    )


def _names(value: Any, name: str, key: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not all(isinstance(item, str) for item in value):
        raise _misconfigured(name, f"{key} must be a list of strings")
    return tuple(value)


def _secrets(value: Any, name: str) -> tuple[str, ...]:
    listed = [value] if isinstance(value, str) else value
    if not isinstance(listed, list | tuple) or not listed:
        raise _misconfigured(name, 'needs "secrets": one or more "whsec_<base64>" strings')
    for secret in listed:
        if not isinstance(secret, str) or not secret.startswith(SECRET_PREFIX):
            raise _misconfigured(name, 'has a secret that is not a "whsec_<base64>" string')
        try:
            key = base64.b64decode(secret[len(SECRET_PREFIX) :] + "==", validate=False)
        except (binascii.Error, ValueError):
            key = b""
        if len(key) < 24:
            raise _misconfigured(
                name, "has a secret shorter than 24 bytes once decoded (use 24 to 64 random bytes)"
            )
    return tuple(listed)


def _endpoint(name: str, entry: Any) -> Endpoint:
    if not isinstance(entry, Mapping):
        raise _misconfigured(name, 'must be a mapping with "url" and "secrets"')
    unknown = sorted(set(entry) - KEYS)
    if unknown:
        raise _misconfigured(name, f"has unknown keys {', '.join(unknown)}")
    try:
        url = check_ping_url(entry.get("url"), field="url")
    except ScheduleValidationError as exc:
        raise _misconfigured(name, f"url {exc.message}") from None
    if not url:
        raise _misconfigured(name, 'needs a "url" (http:// or https://)')
    concurrency = entry.get("concurrency", DEFAULT_CONCURRENCY)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise _misconfigured(name, "concurrency must be a whole number of at least 1")
    return Endpoint(
        name=name,
        url=url,
        secrets=_secrets(entry.get("secrets"), name),
        tenants=_names(entry.get("tenants"), name, "tenants"),
        types=_names(entry.get("types"), name, "types"),
        concurrency=concurrency,
    )


_parsed: tuple[object, dict[str, Endpoint]] | None = None
"""The endpoints read from the settings object they came from (a delivery round asks for
each row; ``get_settings`` gives a new object when a setting changes)."""


def endpoints() -> dict[str, Endpoint]:
    """Every configured endpoint by name (``EndpointError`` for one that is misconfigured:
    never remembered, so it is said each time)."""
    global _parsed
    settings = get_settings()
    if _parsed is None or _parsed[0] is not settings:
        setting = settings.EVENT_ENDPOINTS or {}
        read = {str(name): _endpoint(str(name), entry) for name, entry in setting.items()}
        _parsed = (settings, read)
    return dict(_parsed[1])


def usable(tenant: str, event_type: str) -> list[str]:
    """Names of the endpoints a schedule of ``tenant`` may send ``event_type`` to, sorted."""
    return sorted(
        name
        for name, endpoint in endpoints().items()
        if endpoint.serves(tenant) and endpoint.accepts(event_type)
    )


def resolve(options: Any, tenant: str, event_type: str) -> Endpoint:
    """The endpoint a schedule's ``options.endpoint`` names for its tenant and event type;
    when it names none, the only one it may use. ``EndpointError`` saying what to write."""
    configured = endpoints()
    allowed = usable(tenant, event_type)
    choices = ", ".join(allowed) or "(none: add one to SCHEDULER_EVENT_ENDPOINTS)"
    name = options.get("endpoint") if isinstance(options, Mapping) else None
    if name is None:
        if len(allowed) == 1:
            return configured[allowed[0]]
        raise EndpointError(
            FIELD,
            f'an event schedule needs an endpoint: set options {{"endpoint": "<name>"}}, one of '
            f"{choices}",
            code="endpoint_required",
        )
    if not isinstance(name, str) or name not in configured:
        raise EndpointError(
            FIELD,
            f"unknown endpoint {name!r}: SCHEDULER_EVENT_ENDPOINTS names none such; use one of "
            f"{choices}",
            code="unknown_endpoint",
        )
    endpoint = configured[name]
    if not endpoint.serves(tenant):
        raise EndpointError(
            FIELD,
            f"endpoint {name!r} is not one tenant {tenant!r} may use; use one of {choices}",
            code="endpoint_not_allowed",
        )
    if not endpoint.accepts(event_type):
        raise EndpointError(
            FIELD,
            f"endpoint {name!r} does not accept events of type {event_type!r} (its types: "
            f"{', '.join(endpoint.types or ())}); use one of {choices}",
            code="endpoint_not_allowed",
        )
    return endpoint


def check_event_route(task: str, options: Any, tenant: str) -> Endpoint | None:
    """For an event schedule (``event:<type>``), the endpoint it goes to (``resolve``); None
    for a task's schedule."""
    event_type = event_type_of(task)
    return None if event_type is None else resolve(options, tenant, event_type)
