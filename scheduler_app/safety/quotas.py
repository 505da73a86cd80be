"""Quotas: per schedule occurrences per day, per tenant active schedules and occurrences per hour.

Checked where they can be kept: the number of active schedules of a tenant when a schedule is
created or edited (refused with an error), the occurrences per day and per hour when an
occurrence is first handed to the broker (it ends ``skipped`` with ``quota_per_day`` or
``quota_tenant_hour`` and is counted in ``scheduler_occurrences_skipped_total``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import QuerySet

from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import (
    Occurrence,
    OccurrenceState,
    Schedule,
    ScheduleStatus,
    TenantQuota,
)
from scheduler_app.safety.tenancy import allowed_tenants

PER_DAY = "quota_per_day"
TENANT_HOUR = "quota_tenant_hour"


def visible_to(queryset: QuerySet[TenantQuota], user: Any) -> QuerySet[TenantQuota]:
    """The quotas ``user`` may see: all for a user of all tenants, else their tenants'."""
    tenants = allowed_tenants(user)
    return queryset if tenants is None else queryset.filter(tenant__in=sorted(tenants))


def may_change(user: Any) -> bool:
    """Quotas are the platform's limits on tenants: only a user of all tenants sets them (a
    tenant's own staff could otherwise lift their limit or zero another tenant's)."""
    return allowed_tenants(user) is None and bool(
        getattr(user, "is_superuser", False) or user.has_perm("scheduler_app.change_tenantquota")
    )


def check_active_quota(schedule: Schedule) -> None:
    """Refuse a schedule that would exceed its tenant's ``max_active_schedules``."""
    if schedule.status != ScheduleStatus.ACTIVE:
        return
    quota = TenantQuota.objects.filter(tenant=schedule.tenant).first()
    if quota is None or quota.max_active_schedules is None:
        return
    others = (
        Schedule.objects.filter(tenant=schedule.tenant, status=ScheduleStatus.ACTIVE)
        .exclude(pk=schedule.pk)
        .count()
    )
    if others >= quota.max_active_schedules:
        raise ScheduleValidationError(
            "tenant",
            f"tenant {schedule.tenant or '(none)'!r} has {others} active schedules, its quota "
            f"is {quota.max_active_schedules}; cancel or pause one, or ask an operator to raise "
            "the tenant's quota",
            code="quota",
        )


def day_start(now: datetime, zone: str) -> datetime:
    """Midnight of ``now``'s day in the schedule's zone (a day of the schedule's calendar)."""
    local = now.astimezone(ZoneInfo(zone))
    return local.replace(hour=0, minute=0, second=0, microsecond=0)


def over_quota(rows: Sequence[Occurrence], now: datetime) -> dict[object, str]:
    """Occurrence pk -> reason, for first handoffs beyond a quota (rows come with schedule)."""
    fresh = [row for row in rows if row.emitted_at is None and row.state == OccurrenceState.PENDING]
    refused: dict[object, str] = {}
    _per_day(fresh, now, refused)
    _per_tenant_hour([row for row in fresh if row.pk not in refused], now, refused)
    return refused


def _per_day(rows: list[Occurrence], now: datetime, refused: dict[object, str]) -> None:
    limited = [row for row in rows if row.schedule.max_per_day is not None]
    used: dict[object, int] = {}
    for row in sorted(limited, key=lambda r: r.scheduled_for):
        schedule = row.schedule
        if schedule.pk not in used:
            used[schedule.pk] = Occurrence.objects.filter(
                schedule=schedule, emitted_at__gte=day_start(now, schedule.timezone)
            ).count()
        if used[schedule.pk] >= (schedule.max_per_day or 0):
            refused[row.pk] = PER_DAY
        else:
            used[schedule.pk] += 1


def _per_tenant_hour(rows: list[Occurrence], now: datetime, refused: dict[object, str]) -> None:
    tenants = Counter(row.schedule.tenant for row in rows)
    if not tenants:
        return
    limits = dict(
        TenantQuota.objects.filter(
            tenant__in=list(tenants), max_occurrences_per_hour__isnull=False
        ).values_list("tenant", "max_occurrences_per_hour")
    )
    used = {
        tenant: Occurrence.objects.filter(
            schedule__tenant=tenant, emitted_at__gte=now - timedelta(hours=1)
        ).count()
        for tenant in limits
    }
    for row in sorted(rows, key=lambda r: r.scheduled_for):
        tenant = row.schedule.tenant
        if tenant not in limits:
            continue
        if used[tenant] >= (limits[tenant] or 0):
            refused[row.pk] = TENANT_HOUR
        else:
            used[tenant] += 1
