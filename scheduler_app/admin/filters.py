"""List filters of the schedule and occurrence lists."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from scheduler_app.models import Schedule
from scheduler_app.safety.tenancy import allowed_tenants, scope


class ValueFilter(admin.SimpleListFilter):
    """The rows whose ``path`` is the chosen value (all of them when none is chosen)."""

    path = ""

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset if value is None else queryset.filter(**{self.path: value})


class TenantFilter(ValueFilter):
    """By tenant: only the tenants the user may see are offered."""

    title = "tenant"
    parameter_name = "tenant"
    path = "tenant"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        tenants = allowed_tenants(request.user)
        if tenants is None:
            names = Schedule.objects.order_by("tenant").values_list("tenant", flat=True)
            tenants = set(names.distinct())
        return [(t, t or "(no tenant)") for t in sorted(tenants)]


class OccurrenceTenantFilter(TenantFilter):
    parameter_name = "schedule__tenant"
    path = "schedule__tenant"


def short_filter(field: str, choices: list[tuple[str, str]]) -> type[admin.SimpleListFilter]:
    """A filter on ``field`` that lists the short values (``skip``), not the long labels."""

    class ShortChoices(ValueFilter):
        title = field.replace("_", " ")
        parameter_name = path = field

        def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
            return [(value, value.replace("_", " ")) for value, _ in choices]

    ShortChoices.__name__ = f"{field.title().replace('_', '')}Filter"
    return ShortChoices


class LastOutcomeFilter(admin.SimpleListFilter):
    title = "last outcome"
    parameter_name = "last"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(s, s) for s in ("succeeded", "failed", "expired", "skipped", "running", "none")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value is None:
            return queryset
        if value == "none":
            return queryset.filter(last__isnull=True)
        return queryset.filter(last__state=value)


class TaskFilter(ValueFilter):
    title = "task"
    parameter_name = path = "task"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        qs = scope(Schedule.objects.all(), request.user)
        return [(t, t) for t in qs.order_by("task").values_list("task", flat=True).distinct()[:200]]
