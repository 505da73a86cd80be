"""The "Load ahead" page: the slots of the user's active schedules per hour for the next 1-7
days as one picture, the busiest minutes with the schedules behind them, the days a zone
changes its offset or a holiday excludes slots, and (with a rate) the jitter a herd needs.
Scoped to the user's tenants like every admin page; ``view_schedule`` is enough."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from scheduler_app.admin.display import instant_text
from scheduler_app.forecast.counts import MAX_DAYS, check_rate, forecast
from scheduler_app.forecast.picture import render
from scheduler_app.models import Schedule, ScheduleStatus
from scheduler_app.safety.tenancy import scope

PAGE_MAX_SLOTS = 200_000
"""Slots the page counts at most (about a second of one web worker; measured 4.6 µs a slot of
a minutely cron): any staff user with view_schedule may open it. The command counts more."""
PAGE_SECONDS = 2.0
"""And seconds: a slot of some rules costs far more (a BYSETPOS rule about 2 ms), a rule with
no slot in the range costs a search; both are checked after every slot."""


def forecast_page(model_admin: Any, request: HttpRequest) -> HttpResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    days = _number(request, "days", 1, int) or 1
    if not 1 <= days <= MAX_DAYS:
        messages.warning(request, f"days must be 1 to {MAX_DAYS}: showing 1")
        days = 1
    rate = _number(request, "rate", None, float)
    try:
        check_rate(rate)
    except ValueError as exc:
        messages.warning(request, f"{exc}: left out")
        rate = None
    now = timezone.now().replace(second=0, microsecond=0)
    schedules = scope(Schedule.objects.filter(status=ScheduleStatus.ACTIVE), request.user)
    result = forecast(
        schedules.iterator(chunk_size=2000),
        now,
        days=days,
        rate=rate,
        max_slots=PAGE_MAX_SLOTS,
        seconds=PAGE_SECONDS,
    )
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": "Load ahead",
        "now_text": instant_text(now),
        "days": days,
        "day_choices": range(1, MAX_DAYS + 1),
        "rate": rate,
        "forecast": result,
        "picture": render(result),
        "lanes": sorted(result.lanes.items()),
    }
    return TemplateResponse(request, "admin/scheduler_app/forecast.html", context)


def _number(request: HttpRequest, name: str, default: Any, kind: type) -> Any:
    raw = request.GET.get(name, "").strip()
    if not raw:
        return default
    try:
        return kind(raw)
    except ValueError:
        messages.warning(request, f"{name} must be a number, not {raw!r}: left out")
        return default
