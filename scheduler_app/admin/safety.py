"""The operations models in the admin: kill switches (changed only through
``safety.killswitch.set_kill_switch``, with the acting user, so every change is checked and
audited), their audit, beat heartbeats (read-only) and tenant quotas.

Who may turn which switch, and change which quota, is decided by the safety layer; this module
only scopes what is listed (``visible_to``) and narrows the choices a form offers.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from scheduler_app.admin.actions import SelectionGuard
from scheduler_app.admin.base import ReadOnlyAdmin, RequestForm
from scheduler_app.admin.display import instant_text
from scheduler_app.admin.pages import SERVICE_ERRORS, RefusedSave, error_text
from scheduler_app.models import (
    BeatHeartbeat,
    KillSwitch,
    KillSwitchEvent,
    KillSwitchScope,
    TenantQuota,
)
from scheduler_app.safety import killswitch, quotas
from scheduler_app.safety.tenancy import allowed_tenants


class KillSwitchForm(forms.ModelForm):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Reason for this change",
        help_text="Why it is turned on or off now: kept in the audit with your user name. "
        "Turning a switch off needs its own reason; the one it was turned on with is kept.",
    )

    class Meta:
        model = KillSwitch
        fields = ("scope", "target", "enabled", "reason")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.request = kwargs.pop("request", None)
        super().__init__(*args, **kwargs)
        self.initial["reason"] = ""  # never offer the "on" reason as the "off" one
        user = getattr(self.request, "user", None)
        if user is not None and self.instance._state.adding:
            _narrow_choices(self, user)


def _narrow_choices(form: forms.ModelForm, user: Any) -> None:
    """A tenant's staff are offered their tenants' switches only (the service refuses the
    rest anyway)."""
    tenants = allowed_tenants(user)
    if tenants is None:  # a user of all tenants (a superuser): every scope
        return
    form.fields["scope"] = forms.ChoiceField(
        choices=[(KillSwitchScope.TENANT.value, KillSwitchScope.TENANT.label)],
        initial=KillSwitchScope.TENANT.value,
    )
    names = sorted(t for t in tenants if t)
    form.fields["target"] = forms.ChoiceField(
        choices=[(t, t) for t in names],
        help_text="One of your tenants." if names else "You are a member of no tenant.",
    )


def instant_column(field: str, label: str) -> Any:
    """A list column showing ``field`` in the admin's one format for instants (UTC)."""

    def column(obj: Any) -> str:
        return instant_text(getattr(obj, field))

    column.short_description = label  # type: ignore[attr-defined]
    column.admin_order_field = field  # type: ignore[attr-defined]
    return column


@admin.register(KillSwitch)
class KillSwitchAdmin(RefusedSave, RequestForm, SelectionGuard, admin.ModelAdmin):
    form = KillSwitchForm
    list_display = (
        "scope",
        "target",
        "enabled",
        "reason",
        "changed_by",
        instant_column("changed_at", "changed at"),
    )
    list_filter = ("enabled", "scope")
    search_fields = ("target", "reason", "changed_by")

    def get_queryset(self, request: HttpRequest) -> QuerySet[KillSwitch]:
        return killswitch.visible_to(super().get_queryset(request), request.user)

    def get_readonly_fields(self, request: HttpRequest, obj: KillSwitch | None = None) -> Any:
        return ("scope", "target", "changed_by", "changed_at") if obj else ()

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # turn a switch off instead: the audit keeps both

    def save_model(self, request: HttpRequest, obj: KillSwitch, form: Any, change: bool) -> None:
        try:
            saved = killswitch.set_kill_switch(
                obj.scope,
                obj.target,
                enabled=obj.enabled,
                user=request.user,
                reason=form.cleaned_data["reason"],
                now=timezone.now(),
            )
        except SERVICE_ERRORS as exc:  # outside the user's tenants, not a superuser, ...
            messages.error(request, f"The switch was not changed: {error_text(exc)}")
            self.refuse(obj)
            return
        obj.pk = saved.pk


@admin.register(KillSwitchEvent)
class KillSwitchEventAdmin(SelectionGuard, ReadOnlyAdmin):
    list_display = (instant_column("at", "at"), "scope", "target", "enabled", "by", "reason")
    list_filter = ("enabled", "scope")
    ordering = ("-at",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[KillSwitchEvent]:
        return killswitch.visible_to(super().get_queryset(request), request.user)


@admin.register(BeatHeartbeat)
class BeatHeartbeatAdmin(SelectionGuard, ReadOnlyAdmin):
    """Whether each beat is alive, for every staff user with the view permission; a beat's
    last error can name any tenant's schedule, so only users of all tenants see it."""

    list_display = (
        "host",
        "pid",
        "version",
        instant_column("started_at", "started at"),
        instant_column("last_tick_at", "last tick"),
        "last_batch_size",
        "clock_skew",
        "last_error",
        instant_column("stopped_at", "stopped at"),
    )
    ordering = ("-last_tick_at",)

    def get_list_display(self, request: HttpRequest) -> Any:
        shown = super().get_list_display(request)
        if allowed_tenants(request.user) is None:
            return shown
        return tuple(column for column in shown if column != "last_error")

    def get_exclude(self, request: HttpRequest, obj: Any = None) -> Any:
        return None if allowed_tenants(request.user) is None else ("last_error", "last_error_at")


@admin.register(TenantQuota)
class TenantQuotaAdmin(SelectionGuard, admin.ModelAdmin):
    """A tenant's staff see their tenants' quotas; only ``quotas.may_change`` users edit."""

    list_display = ("tenant", "max_active_schedules", "max_occurrences_per_hour")
    search_fields = ("tenant",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[TenantQuota]:
        return quotas.visible_to(super().get_queryset(request), request.user)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return super().has_add_permission(request) and quotas.may_change(request.user)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) and quotas.may_change(request.user)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_delete_permission(request, obj) and quotas.may_change(request.user)
