"""System checks of the observability and event settings (run by ``manage.py check`` and when
a beat or a worker starts)."""

from __future__ import annotations

from typing import Any

from django.core import checks

from scheduler_app.checks.startup import TAG
from scheduler_app.compat import install_extra
from scheduler_app.conf import get_settings
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.handoff.endpoints import EndpointError, endpoints
from scheduler_app.observability import sentry
from scheduler_app.observability.urls import check_ping_url


@checks.register(TAG)
def check_observability(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """``scheduler_app.E020``: ``SCHEDULER_BEAT_PING_URL`` is not a ping URL;
    ``scheduler_app.W020``: ``SCHEDULER_SENTRY_CRONS`` without sentry-sdk installed."""
    settings = get_settings()
    problems: list[checks.CheckMessage] = []
    try:
        check_ping_url(settings.BEAT_PING_URL, allow_credentials=True, field="BEAT_PING_URL")
    except ScheduleValidationError as exc:
        problems.append(
            checks.Error(
                f"SCHEDULER_BEAT_PING_URL {exc.message}",
                hint='an http(s) URL such as https://hc-ping.com/<uuid>, or "" for none',
                id="scheduler_app.E020",
            )
        )
    if settings.SENTRY_CRONS and sentry.sentry_sdk is None:
        problems.append(
            checks.Warning(
                "SCHEDULER_SENTRY_CRONS is on but sentry-sdk is not installed: no check-in is sent",
                hint=install_extra("sentry") + ", then call sentry_sdk.init()",
                id="scheduler_app.W020",
            )
        )
    return problems


@checks.register(TAG)
def check_event_endpoints(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """``scheduler_app.E030``: an entry of ``SCHEDULER_EVENT_ENDPOINTS`` is misconfigured
    (every event schedule naming it would be refused, and ``run_event_deliveries`` stops)."""
    try:
        endpoints()
    except EndpointError as exc:
        return [
            checks.Error(
                exc.message,
                hint='{"name": {"url": "https://...", "secrets": ["whsec_<base64>"]}} '
                "(docs/events.md)",
                id="scheduler_app.E030",
            )
        ]
    return []
