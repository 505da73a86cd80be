"""The operations models in the admin: kill switches (changed only through
``safety.killswitch.set_kill_switch``, so every change is audited), their audit, beat
heartbeats (read-only) and tenant quotas; plus approving schedule versions."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from scheduler_app.errors import SchedulerError, ScheduleValidationError
from scheduler_app.models import (
    BeatHeartbeat,
    KillSwitch,
    KillSwitchEvent,
    Schedule,
    ScheduleStatus,
    TenantQuota,
)
from scheduler_app.safety.approval import PERMISSION as APPROVE_PERMISSION
from scheduler_app.safety.approval import approve_schedule
from scheduler_app.safety.killswitch import set_kill_switch


class KillSwitchForm(forms.ModelForm):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Why it is turned on or off: kept in the audit with your user name.",
    )

    class Meta:
        model = KillSwitch
        fields = ("scope", "target", "enabled", "reason")


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows the scheduler writes: operators look, nobody edits."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(KillSwitch)
class KillSwitchAdmin(admin.ModelAdmin):
    form = KillSwitchForm
    list_display = ("scope", "target", "enabled", "reason", "changed_by", "changed_at")
    list_filter = ("enabled", "scope")
    search_fields = ("target", "reason", "changed_by")

    def get_readonly_fields(self, request: HttpRequest, obj: KillSwitch | None = None) -> Any:
        return ("scope", "target", "changed_by", "changed_at") if obj else ()

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # turn a switch off instead: the audit keeps both

    def save_model(self, request: HttpRequest, obj: KillSwitch, form: Any, change: bool) -> None:
        try:
            saved = set_kill_switch(
                obj.scope,
                obj.target,
                enabled=obj.enabled,
                by=request.user.get_username(),
                reason=form.cleaned_data["reason"],
                now=timezone.now(),
            )
        except ScheduleValidationError as exc:
            # The form validated the fields already; what is left is a scope/target mismatch.
            messages.error(request, exc.message)
            return
        obj.pk = saved.pk


@admin.register(KillSwitchEvent)
class KillSwitchEventAdmin(ReadOnlyAdmin):
    list_display = ("at", "scope", "target", "enabled", "by", "reason")
    list_filter = ("enabled", "scope")
    ordering = ("-at",)


@admin.register(BeatHeartbeat)
class BeatHeartbeatAdmin(ReadOnlyAdmin):
    list_display = (
        "host",
        "pid",
        "version",
        "started_at",
        "last_tick_at",
        "last_batch_size",
        "clock_skew",
        "last_error",
        "stopped_at",
    )
    ordering = ("-last_tick_at",)


@admin.register(TenantQuota)
class TenantQuotaAdmin(admin.ModelAdmin):
    list_display = ("tenant", "max_active_schedules", "max_occurrences_per_hour")
    search_fields = ("tenant",)


@admin.action(
    description="Approve the current version of selected schedules", permissions=["approve"]
)
def approve_selected(
    modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Schedule]
) -> None:
    """Each schedule awaiting approval is approved at the version the list shows."""
    approved = 0
    for schedule in queryset.filter(status=ScheduleStatus.AWAITING_APPROVAL):
        try:
            approve_schedule(
                schedule.pk, version=schedule.version, user=request.user, now=timezone.now()
            )
            approved += 1
        except (SchedulerError, PermissionError) as exc:
            messages.error(request, f"{schedule}: {exc}")
    skipped = queryset.exclude(status=ScheduleStatus.AWAITING_APPROVAL).count()
    messages.info(
        request,
        f"{approved} schedule(s) approved"
        + (f"; {skipped} not awaiting approval, left as they are" if skipped else ""),
    )


def has_approve_permission(request: HttpRequest) -> bool:
    return bool(request.user.has_perm(APPROVE_PERMISSION))
