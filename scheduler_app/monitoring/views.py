"""HTTP views: Prometheus metrics (protected, tenant-scoped) and the beat health check."""

from __future__ import annotations

import hmac

from django.http import HttpRequest, HttpResponse, JsonResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from scheduler_app.clock import SystemClock
from scheduler_app.conf import get_settings
from scheduler_app.monitoring.health import beat_health
from scheduler_app.monitoring.metrics import EVERYTHING, Audience, build_registry
from scheduler_app.safety.tenancy import allowed_tenants

BEARER = "Bearer "


class Refused(Exception):
    """The request may not read metrics: ``status`` and a message saying how to get in."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text format.

    - ``Authorization: Bearer <SCHEDULER_METRICS_TOKEN>`` and superusers: every figure.
    - Other staff users: only the series labelled with one of their tenants
      (``scheduler_app.safety.tenancy.allowed_tenants``), none of the system-wide figures.
    - Anyone else: 401 (no or a wrong credential) or 403 (logged in, not staff), no figure.
    """
    try:
        audience = audience_of(request)
    except Refused as refused:
        response = HttpResponse(f"{refused}\n", status=refused.status, content_type="text/plain")
        if refused.status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="scheduler metrics"'
        return response
    return HttpResponse(
        generate_latest(build_registry(audience=audience)), content_type=CONTENT_TYPE_LATEST
    )


def audience_of(request: HttpRequest) -> Audience:
    """What this request may read; ``Refused`` when nothing."""
    header = request.headers.get("Authorization", "")
    if header.startswith(BEARER):
        check_token(header.removeprefix(BEARER).strip())
        return EVERYTHING  # a presented token decides alone: a wrong one is never downgraded
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        raise Refused(
            401,
            "metrics need a staff login or 'Authorization: Bearer <SCHEDULER_METRICS_TOKEN>'",
        )
    if not user.is_active or not user.is_staff:
        raise Refused(403, "metrics are for staff users; ask an administrator for staff status")
    if user.is_superuser:
        return EVERYTHING
    return Audience.of_tenants(allowed_tenants(user))


def check_token(presented: str) -> None:
    """``Refused`` unless ``presented`` is the configured token (compared in constant time).

    A header may carry any character (WSGI hands it over as latin-1 text); a token is ASCII,
    so anything else is refused before comparing, and the comparison is of bytes.
    """
    token = get_settings().METRICS_TOKEN
    if not token:
        raise Refused(401, "no SCHEDULER_METRICS_TOKEN is set: log in as a staff user instead")
    if not presented.isascii() or not hmac.compare_digest(
        presented.encode("ascii"), token.encode("utf-8")
    ):
        raise Refused(401, "the bearer token does not match SCHEDULER_METRICS_TOKEN")


def health(request: HttpRequest) -> JsonResponse:
    """200 when a beat ticked within ``SCHEDULER_HEALTH_STALE`` seconds, else 503.

    Public on purpose (load balancers and probes have no login): it tells only whether the
    scheduler runs, never what it runs.
    """
    report = beat_health(SystemClock().now(), get_settings().HEALTH_STALE)
    body = {
        "ok": report.ok,
        "beats_alive": report.beats_alive,
        "last_tick_age_seconds": report.last_tick_age,
        "stale_after_seconds": report.stale_after,
        "message": report.message,
    }
    return JsonResponse(body, status=200 if report.ok else 503)
