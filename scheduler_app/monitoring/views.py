"""HTTP views: Prometheus metrics (protected) and the beat health check (for probes)."""

from __future__ import annotations

import hmac

from django.http import HttpRequest, HttpResponse, JsonResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from scheduler_app.clock import SystemClock
from scheduler_app.conf import get_settings
from scheduler_app.monitoring.health import beat_health
from scheduler_app.monitoring.metrics import build_registry


def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text format, for staff users or ``Authorization: Bearer <METRICS_TOKEN>``."""
    if not _may_scrape(request):
        return HttpResponse(
            "metrics need a staff login or 'Authorization: Bearer <SCHEDULER_METRICS_TOKEN>'\n",
            status=403,
            content_type="text/plain",
        )
    return HttpResponse(generate_latest(build_registry()), content_type=CONTENT_TYPE_LATEST)


def _may_scrape(request: HttpRequest) -> bool:
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and user.is_staff:
        return True
    token = get_settings().METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    if not token or not header.startswith("Bearer "):
        return False
    return hmac.compare_digest(header.removeprefix("Bearer ").strip(), token)


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
