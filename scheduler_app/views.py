"""HTTP views: Prometheus metrics."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from scheduler_app.metrics import registry


def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text format. Protect it like any internal endpoint (network or auth)."""
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)
