"""Occurrences: read-only, newest slot first, local and UTC times labelled, attempts inline,
filters by state, trigger, schedule, lateness and tenant, search by schedule name; a replay
action behind ``replay_occurrence`` with a confirmation page that records who and why."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.apps import apps
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.db.models import DurationField, ExpressionWrapper, F, QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html

from scheduler_app import services
from scheduler_app.admin.actions import SelectionGuard
from scheduler_app.admin.base import MissingIs404, ReadOnlyAdmin, instant_field
from scheduler_app.admin.display import (
    STATE_CLASS,
    format_seconds,
    instant_text,
    local_and_utc,
    occurrence_title,
)
from scheduler_app.admin.filters import OccurrenceTenantFilter, ValueFilter, short_filter
from scheduler_app.admin.pages import Page, render, why_field
from scheduler_app.admin.paging import EstimatedCountPaginator
from scheduler_app.definition.schedule import as_key, occurrence_id
from scheduler_app.djtasks.results import RESULT_ADMIN, result_row
from scheduler_app.errors import SchedulerError
from scheduler_app.models import (
    AttemptKind,
    HandoffTarget,
    Occurrence,
    OccurrenceAttempt,
    OccurrenceState,
    Schedule,
    Trigger,
)
from scheduler_app.safety.tenancy import scope

REPLAY_PERMISSION = "scheduler_app.replay_occurrence"
VIEW_PERMISSION = "scheduler_app.view_occurrence"
LATE_AFTER = timedelta(seconds=60)
SCHEDULE_CHOICES = 100
ERROR_IS_CURRENT = (OccurrenceState.FAILED, OccurrenceState.EXPIRED, OccurrenceState.RETRYING)
"""States in which ``last_error`` is the occurrence's own error; in any other (succeeded, or
pending again after a replay) it belongs to an earlier attempt."""
TIMES = (
    "window_start",
    "window_end",
    "not_before",
    "deadline_at",
    "created_at",
    "dispatched_at",
    "received_at",
    "started_at",
    "finished_at",
)
OPERATOR_EVENTS: dict[str, str] = {AttemptKind.REPLAY: "replay", AttemptKind.CANCEL: "cancel"}


def attempt_outcome(attempt: OccurrenceAttempt) -> str:
    """What the attempt row says: a worker's outcome, or the operator event it records (its
    ``outcome`` then holds the state it left, which is not the attempt's result)."""
    event = OPERATOR_EVENTS.get(attempt.kind)
    if event is None:
        return attempt.outcome or "-"
    who = attempt.by or "system"
    was = f" (it was {attempt.outcome})" if attempt.outcome else ""
    return f"{event} requested by {who}{was}"


class ScheduleFilter(ValueFilter):
    """By schedule: the user's schedules by name (the first 100; the search box finds more)."""

    title = "schedule"
    parameter_name = "schedule__id__exact"
    path = "schedule_id"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        schedules = scope(Schedule.objects.all(), request.user).order_by("name")
        return [
            (str(pk), name or key or str(pk))
            for pk, name, key in schedules.values_list("pk", "name", "key")[:SCHEDULE_CHOICES]
        ]


class LateFilter(admin.SimpleListFilter):
    title = "late"
    parameter_name = "late"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "dispatched over 60 s late"), ("no", "on time")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value is None:
            return queryset
        lag = ExpressionWrapper(
            F("dispatched_at") - F("scheduled_for"), output_field=DurationField()
        )
        annotated = queryset.annotate(lag=lag)
        return (
            annotated.filter(lag__gt=LATE_AFTER)
            if value == "yes"
            else annotated.filter(lag__lte=LATE_AFTER)
        )


class AttemptFormSet(BaseInlineFormSet):
    """The attempts of one occurrence, looked up by its id and its slot (the attempts'
    partition key on PostgreSQL: one partition's index instead of each one's)."""

    def __init__(
        self,
        data: Any = None,
        files: Any = None,
        instance: Any = None,
        save_as_new: bool = False,
        prefix: str | None = None,
        queryset: Any = None,
        **kwargs: Any,
    ) -> None:
        if instance is not None and instance.pk is not None and queryset is not None:
            queryset = queryset.filter(scheduled_for=instance.scheduled_for)
        super().__init__(data, files, instance, save_as_new, prefix, queryset, **kwargs)


class AttemptInline(admin.TabularInline):
    model = OccurrenceAttempt
    formset = AttemptFormSet
    extra = 0
    can_delete = False
    fields = (
        "number",
        "kind",
        "worker",
        "started_text",
        "finished_text",
        "outcome_text",
        "error",
        "note",
    )
    readonly_fields = fields
    ordering = ("started_at", "pk")

    def get_queryset(self, request: HttpRequest) -> QuerySet[OccurrenceAttempt]:
        return super().get_queryset(request).select_related("occurrence")

    @admin.display(description="started")
    def started_text(self, obj: OccurrenceAttempt) -> str:
        return instant_text(obj.started_at, obj.occurrence.timezone)

    @admin.display(description="finished")
    def finished_text(self, obj: OccurrenceAttempt) -> str:
        return instant_text(obj.finished_at, obj.occurrence.timezone)

    @admin.display(description="outcome")
    def outcome_text(self, obj: OccurrenceAttempt) -> str:
        return attempt_outcome(obj)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.has_perm(VIEW_PERMISSION))

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReplayForm(forms.Form):
    note = why_field()


@admin.register(Occurrence)
class OccurrenceAdmin(MissingIs404, SelectionGuard, ReadOnlyAdmin):
    """Machine-written rows: read-only, with a replay action for the dead letters."""

    missing = "no such occurrence"
    list_display = (
        "slot_text",
        "schedule_link",
        "trigger",
        "state_badge",
        "reason",
        "attempts",
        "lateness",
    )
    list_display_links = ("slot_text",)
    list_filter = (
        short_filter("state", OccurrenceState.choices),
        short_filter("trigger", Trigger.choices),
        ScheduleFilter,
        LateFilter,
        OccurrenceTenantFilter,
    )
    search_fields = ("schedule__name", "schedule__key", "task")
    """A search for an idempotency key finds its row by id (``get_search_results``)."""
    ordering = ("-scheduled_for",)
    list_select_related = ("schedule",)
    show_full_result_count = False
    paginator = EstimatedCountPaginator
    list_per_page = 50
    inlines = (AttemptInline,)
    actions = ("replay",)
    readonly_fields = (
        "schedule_link",
        "task_result_link",
        "slot_text",
        "error_text",
        *(f"{name}_text" for name in TIMES),
    )
    fieldsets = (
        (None, {"fields": ("slot_text", "schedule_link", "task", "kwargs", "trigger", "state")}),
        ("Outcome", {"fields": ("reason", "error_text", "attempts", "task_result_link")}),
        (
            "Times (local and UTC)",
            {"fields": ("timezone", *(f"{name}_text" for name in TIMES), "received_by")},
        ),
        ("Request", {"fields": ("requested_by", "note", "idempotency_key", "schedule_version")}),
    )
    window_start_text = instant_field("window_start")
    window_end_text = instant_field("window_end")
    not_before_text = instant_field("not_before")
    deadline_at_text = instant_field("deadline_at")
    created_at_text = instant_field("created_at")
    dispatched_at_text = instant_field("dispatched_at")
    received_at_text = instant_field("received_at")
    started_at_text = instant_field("started_at")
    finished_at_text = instant_field("finished_at")

    class Media:
        css = {"all": ("scheduler_app/admin.css",)}

    def get_queryset(self, request: HttpRequest) -> QuerySet[Occurrence]:
        return scope(super().get_queryset(request), request.user, "schedule__tenant")

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Occurrence], search_term: str
    ) -> tuple[QuerySet[Occurrence], bool]:
        """An idempotency key pasted in the search box finds its occurrence through the
        primary key (the id is derived from the key), not by a scan of the ledger; its
        schedule id in any case, as a UUID may be shown. A term that reads as a key of no
        occurrence is searched as any other term (schedule name and key, task)."""
        key = as_key(search_term.strip())
        if key is not None:
            found = queryset.filter(pk=occurrence_id(key), idempotency_key=key)
            if found.exists():
                return found, False
        return super().get_search_results(request, queryset, search_term)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> Any:
        """The heading and breadcrumb name the schedule and the local slot (``subtitle``)."""
        obj = self.get_object(request, unquote(object_id))
        extra = dict(extra_context or {})
        if obj is not None:
            extra["subtitle"] = occurrence_title(obj)
        return super().change_view(request, object_id, form_url, extra)

    def has_replay_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm(REPLAY_PERMISSION))

    @admin.display(description="slot", ordering="scheduled_for")
    def slot_text(self, obj: Occurrence) -> str:
        return local_and_utc(obj.scheduled_for, obj.timezone)

    @admin.display(description="schedule", ordering="schedule__name")
    def schedule_link(self, obj: Occurrence) -> str:
        url = reverse("admin:scheduler_app_schedule_change", args=[obj.schedule_id])
        return format_html('<a href="{}">{}</a>', url, obj.schedule)

    @admin.display(description="state", ordering="state")
    def state_badge(self, obj: Occurrence) -> str:
        return format_html(
            '<span class="sched-badge {}">{}</span>', STATE_CLASS.get(obj.state, ""), obj.state
        )

    @admin.display(description="dispatch lateness")
    def lateness(self, obj: Occurrence) -> str:
        late = obj.dispatch_lateness
        return "-" if late is None else format_seconds(late)

    @admin.display(description="error")
    def error_text(self, obj: Occurrence) -> str:
        if obj.state in ERROR_IS_CURRENT or not obj.last_error:
            return obj.last_error or "-"
        return "- (an earlier attempt's error is in the attempts below)"

    @admin.display(description="task result")
    def task_result_link(self, obj: Occurrence) -> str:
        if obj.target == HandoffTarget.DJANGO_TASKS:
            return _django_tasks_result_link(obj)
        if not apps.is_installed("django_celery_results"):
            return "- (django-celery-results is not installed)"
        result = obj.task_result
        if result is None:
            return "-"
        try:
            url = reverse("admin:django_celery_results_taskresult_change", args=[result.pk])
        except NoReverseMatch:
            return str(result.status)
        return format_html('<a href="{}">{} ({})</a>', url, result.task_id, result.status)

    @admin.action(
        description="Replay selected failed/expired/cancelled occurrences…", permissions=["replay"]
    )
    def replay(self, request: HttpRequest, queryset: QuerySet[Occurrence]) -> Any:
        form = ReplayForm(request.POST if "confirm" in request.POST else None)
        if "confirm" in request.POST and form.is_valid():
            replayed = 0
            for occurrence in queryset:
                try:
                    services.replay_occurrence(
                        occurrence.pk, user=request.user, note=form.cleaned_data["note"]
                    )
                    replayed += 1
                except SchedulerError as exc:
                    self.message_user(request, str(exc), messages.ERROR)
            self.message_user(request, f"{replayed} occurrence(s) replayed")
            return None
        page = Page("replay", list(queryset), form=form, confirm_label="Replay")
        for o in page.schedules:
            page.consequences[o.pk] = [
                f"{o.state} ({o.reason or 'no reason'}): runs again with the same key; "
                "who and why are recorded in its attempts and the schedule's audit trail."
            ]
        return render(self, request, page, heading=occurrence_title)


def _django_tasks_result_link(obj: Occurrence) -> str:
    """The django-tasks-db row of the occurrence's latest handoff (``handoff_id``)."""
    result = result_row(obj.handoff_id)
    if result is None:
        return obj.handoff_id or "-"
    try:
        url = reverse(RESULT_ADMIN, args=[result.pk])
    except NoReverseMatch:
        return f"{result.pk} ({result.status})"
    return format_html('<a href="{}">{} ({})</a>', url, result.pk, result.status)
