"""The schedule admin: a list that reads at a glance, a form in fieldsets with a builder and a
live preview, actions behind their own permissions and confirmation pages, tenant scoping."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.db.models import QuerySet
from django.db.models.fields.json import KeyTextTransform
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html

from scheduler_app import services
from scheduler_app.admin import actions, display, saving, views
from scheduler_app.admin.actions import bulk_action
from scheduler_app.admin.annotations import (
    kill_switched,
    kill_switched_annotation,
    last_outcome_annotation,
)
from scheduler_app.admin.base import MissingIs404, RequestForm, instant_field
from scheduler_app.admin.fieldsets import (
    DECLARED_INSTANTS,
    FIELDSETS_BUILDER,
    HISTORY_FIELDS,
    STATE_FIELDS,
)
from scheduler_app.admin.filters import LastOutcomeFilter, TaskFilter, TenantFilter, short_filter
from scheduler_app.admin.forecasting import forecast_page
from scheduler_app.admin.forms import EDITABLE, ScheduleForm
from scheduler_app.admin.history import audit_context, recent_occurrences, version_diffs
from scheduler_app.admin.monitoring import monitoring_page
from scheduler_app.admin.pages import RefusedSave
from scheduler_app.authoring.preview import calendar_notes, preview_rows
from scheduler_app.definition.schedule import timing_for
from scheduler_app.errors import SchedulerError
from scheduler_app.models import (
    MisfirePolicy,
    OverlapPolicy,
    Schedule,
    ScheduleMode,
    ScheduleOrigin,
    ScheduleStatus,
)
from scheduler_app.models.latest import decoded
from scheduler_app.safety.permissions import RUN_PERMISSION
from scheduler_app.safety.tenancy import scope
from scheduler_app.timing import TICK, Kind

PREVIEW_COUNT = 10


def is_code_declared(schedule: Schedule | None) -> bool:
    """Schedules declared with ``@scheduled`` are owned by code: only pause/resume/run here."""
    return schedule is not None and schedule.origin == ScheduleOrigin.CODE


@admin.register(Schedule)
class ScheduleAdmin(
    RefusedSave, RequestForm, MissingIs404, actions.SelectionGuard, admin.ModelAdmin
):
    form = ScheduleForm
    missing = "no such schedule"
    change_form_template = "admin/scheduler_app/schedule/change_form.html"
    change_list_template = "admin/scheduler_app/schedule/change_list.html"
    object_history_template = "admin/scheduler_app/schedule/object_history.html"
    # Five columns that wrap: the list fits a 1366 px screen (the task sits under the name,
    # the zone under the rule; mode and origin are badges beside the status).
    list_display = (
        "name_text",
        "rule_text",
        "status_badge",
        "next_run_text",
        "last_outcome",
    )
    list_display_links = ("name_text",)
    list_filter = (
        short_filter("status", ScheduleStatus.choices),
        TenantFilter,
        TaskFilter,
        short_filter("kind", [(kind.value, kind.value) for kind in Kind]),
        short_filter("origin", ScheduleOrigin.choices),
        short_filter("mode", ScheduleMode.choices),
        short_filter("misfire_policy", MisfirePolicy.choices),
        short_filter("overlap_policy", OverlapPolicy.choices),
        LastOutcomeFilter,
    )
    search_fields = ("name", "key", "task", "tenant")
    ordering = ("next_run_at",)
    list_per_page = 50
    show_full_result_count = False
    actions = ("pause_selected", "resume_selected", "cancel_selected", "approve_selected")

    class Media:
        css = {"all": ("scheduler_app/admin.css",)}
        js = ("scheduler_app/builder.js",)

    # -- scoping and permissions ---------------------------------------------------------

    def get_queryset(self, request: HttpRequest) -> QuerySet[Schedule]:
        queryset = scope(super().get_queryset(request), request.user)
        if request.resolver_match and request.resolver_match.url_name == (
            "scheduler_app_schedule_changelist"
        ):
            queryset = queryset.annotate(
                kill_switched=kill_switched_annotation(), last=last_outcome_annotation()
            )
        return queryset

    def has_change_permission(self, request: HttpRequest, obj: Schedule | None = None) -> bool:
        # Code owns a declared schedule's definition: its page is a view, with no Save.
        return super().has_change_permission(request, obj) and not is_code_declared(obj)

    def has_delete_permission(self, request: HttpRequest, obj: Schedule | None = None) -> bool:
        return super().has_delete_permission(request, obj) and not is_code_declared(obj)

    def has_pause_permission(self, request: HttpRequest) -> bool:
        return actions.may(request, "pause")

    def has_approve_permission(self, request: HttpRequest) -> bool:
        return actions.may(request, "approve")

    def has_run_permission(self, request: HttpRequest) -> bool:
        return actions.may(request, "run")

    def get_actions(self, request: HttpRequest, action_location: Any = None) -> dict[str, Any]:
        found = super().get_actions(request, **actions.location_kwargs(action_location))
        found.pop("delete_selected", None)  # deletes go through services.delete_schedule
        return found

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        """Deleting a schedule with history cancels it (``services.delete_schedule``): its
        occurrences are kept, so they are not "deleted objects" needing their own permission."""
        to_delete = [format_html("{}: {}", Schedule._meta.verbose_name, obj) for obj in objs]
        kept = sum(obj.occurrences.count() for obj in objs)
        summary = {Schedule._meta.verbose_name_plural: len(to_delete)}
        if kept:
            to_delete.append(
                format_html(
                    "It has {} occurrence(s): it will be cancelled instead of deleted, "
                    "and its history kept.",
                    kept,
                )
            )
        return to_delete, summary, set(), []

    # -- the form ------------------------------------------------------------------------

    def get_fieldsets(self, request: HttpRequest, obj: Schedule | None = None) -> Any:
        if obj is not None and is_code_declared(obj):
            fields = [DECLARED_INSTANTS.get(name, name) for name in EDITABLE if name != "owner"]
            return (
                ("Declared in code (read-only)", {"fields": ("code_location", *fields)}),
                ("State", {"fields": tuple(f for f in STATE_FIELDS if f != "code_location")}),
                ("History", {"fields": HISTORY_FIELDS}),
            )
        fieldsets: list[Any] = list(FIELDSETS_BUILDER)
        if obj is not None:
            # Why this edit: kept with the new version in the audit trail (History).
            fieldsets.append(("Why", {"fields": ("reason",)}))
            fieldsets.append(("State", {"classes": ("collapse",), "fields": STATE_FIELDS}))
            fieldsets.append(("History", {"fields": HISTORY_FIELDS}))
        return fieldsets

    def get_readonly_fields(self, request: HttpRequest, obj: Schedule | None = None) -> Any:
        computed = (*STATE_FIELDS, *HISTORY_FIELDS)
        if obj is not None and is_code_declared(obj):
            return (*EDITABLE, *DECLARED_INSTANTS.values(), *computed)
        return computed

    def save_model(self, request: HttpRequest, obj: Schedule, form: Any, change: bool) -> None:
        saving.save_schedule(self, request, obj, form, change)

    def construct_change_message(
        self, request: HttpRequest, form: Any, formsets: Any, add: bool = False
    ) -> list[dict[str, Any]]:
        return saving.change_message(form, add)

    def delete_model(self, request: HttpRequest, obj: Schedule) -> None:
        outcome = services.delete_schedule(obj.pk, user=request.user)
        if outcome == "cancelled":
            self.message_user(request, f"{obj} has history: it was cancelled instead of deleted")

    # -- list columns --------------------------------------------------------------------

    @admin.display(description="name", ordering="name")
    def name_text(self, obj: Schedule) -> str:
        return format_html(
            '{}<br><span class="sched-utc">{}</span>', display.display_name(obj), obj.task
        )

    @admin.display(description="rule")
    def rule_text(self, obj: Schedule) -> str:
        return format_html(
            '{}<br><span class="sched-utc">{}</span>', display.rule_sentence(obj), obj.timezone
        )

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: Schedule) -> str:
        return display.status_badge(obj, timezone.now(), kill_switched(obj))

    @admin.display(description="next run", ordering="next_run_at")
    def next_run_text(self, obj: Schedule) -> str:
        return display.next_run(obj, kill_switched(obj))

    @admin.display(description="last run", ordering=KeyTextTransform("scheduled_for", "last"))
    def last_outcome(self, obj: Schedule) -> str:
        last = decoded(getattr(obj, "last", None))
        return display.last_outcome(
            last.get("state"), last.get("scheduled_for"), last.get("started_at")
        )

    # -- the change page -----------------------------------------------------------------

    status_text = status_badge  # the change page's field: the list's badges

    @admin.display(description="paused")
    def pause_text(self, obj: Schedule) -> str:
        return display.pause_text(obj) or "-"

    last_slot_text = instant_field("last_scheduled_for", "last slot")
    last_success_text = instant_field("last_success_at", "last success")
    anchor_text = instant_field("anchor")
    starts_text = instant_field("starts_at")
    ends_text = instant_field("ends_at")
    created_text = instant_field("created_at", "created")
    updated_text = instant_field("updated_at", "updated")

    @admin.display(description="next slots")
    def preview(self, obj: Schedule) -> str:
        if obj.pk is None or obj.next_run_at is None:
            return "-"
        try:
            timing = timing_for(obj)
            rows = preview_rows(timing, obj.next_run_at - TICK, PREVIEW_COUNT)
            notes = calendar_notes(timing, obj.next_run_at - TICK, rows)
        except (SchedulerError, ArithmeticError, ValueError) as exc:
            return str(exc)
        return display.preview_table([row.as_display() for row in rows], notes)

    @admin.display(description="owner check")
    def owner_warning(self, obj: Schedule) -> str:
        owner = obj.owner
        if owner is None:
            return "no owner: runs are not checked against a person"
        if owner.is_active and owner.has_perm(RUN_PERMISSION):
            return f"{owner} may run schedules"
        return format_html(
            '<span class="sched-badge sched-warn">{} lacks {} or is inactive: runs end '
            "'forbidden'</span>",
            owner,
            RUN_PERMISSION,
        )

    @admin.display(description="last 20 occurrences")
    def recent(self, obj: Schedule) -> str:
        return recent_occurrences(obj)

    @admin.display(description="versions")
    def versions_diff(self, obj: Schedule) -> str:
        return version_diffs(obj)

    # -- URLs: the preview, the confirmation pages, monitoring ---------------------------

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        own = [
            path("preview/", wrap(self.preview_view), name="scheduler_app_schedule_preview"),
            path("monitoring/", wrap(self.monitoring_view), name="scheduler_app_monitoring"),
            path("forecast/", wrap(self.forecast_view), name="scheduler_app_forecast"),
        ]
        for name in actions.OBJECT_ACTIONS:
            own.append(
                path(
                    f"<path:object_id>/{name}/",
                    wrap(self.object_action_view),
                    {"action": name},
                    name=f"scheduler_app_schedule_{name}",
                )
            )
        return own + super().get_urls()

    def preview_view(self, request: HttpRequest) -> HttpResponse:
        return views.preview(self, request)

    def monitoring_view(self, request: HttpRequest) -> HttpResponse:
        return monitoring_page(self, request)

    def forecast_view(self, request: HttpRequest) -> HttpResponse:
        return forecast_page(self, request)

    def history_view(
        self, request: HttpRequest, object_id: str, extra_context: Any = None
    ) -> HttpResponse:
        """Django's History (its ``LogEntry`` lines) with the schedule's audit trail beside
        them: every operator action through any surface, and the kill switches over it."""
        extra = dict(extra_context or {})
        obj = self.get_object(request, unquote(object_id))
        if obj is not None and self.has_view_or_change_permission(request, obj):
            extra.update(audit_context(obj))
        return super().history_view(request, object_id, extra)

    def object_action_view(self, request: HttpRequest, object_id: str, action: str) -> HttpResponse:
        return actions.object_action(self, request, object_id, action)

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: Any = None,
    ) -> HttpResponse:
        """The add and change pages: the action buttons, and the live preview's URL unless
        code owns the schedule."""
        extra = dict(extra_context or {})
        obj = self.get_object(request, object_id) if object_id is not None else None
        if obj is not None:
            extra["sched_buttons"] = actions.buttons_for(self, request, obj)
        if not is_code_declared(obj):
            extra["sched_preview_url"] = reverse("admin:scheduler_app_schedule_preview")
        return super().changeform_view(request, object_id, form_url, extra)

    # -- bulk actions (each through its confirmation page) -------------------------------

    pause_selected = bulk_action("pause", "Pause selected schedules…", "pause")
    resume_selected = bulk_action("resume", "Resume selected schedules…", "pause")
    cancel_selected = bulk_action("cancel", "Cancel selected schedules…", "change")
    approve_selected = bulk_action("approve", "Approve selected schedules…", "approve")
