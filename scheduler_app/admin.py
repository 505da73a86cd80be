"""The Django admin: schedules go through the service layer; occurrences are read-only."""

from __future__ import annotations

from datetime import UTC, timedelta
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html_join

from scheduler_app import services
from scheduler_app.definitions import timing_for, validate_definition
from scheduler_app.errors import SchedulerError, ScheduleValidationError
from scheduler_app.models import SEMANTIC_FIELDS, Occurrence, Schedule, ScheduleOrigin
from scheduler_app.timing import iter_annotated, next_after

PREVIEW_COUNT = 5
_TICK = timedelta(microseconds=1)
EDITABLE = ("name", "tenant", "owner", *SEMANTIC_FIELDS)


def is_code_declared(schedule: Schedule) -> bool:
    """Schedules declared with ``@scheduled`` are owned by code: only pause/resume here."""
    return schedule.origin == ScheduleOrigin.CODE


class ScheduleForm(forms.ModelForm):
    """Validates the whole definition with the same rules as the API, field by field."""

    expected_version = forms.IntegerField(widget=forms.HiddenInput, required=False)

    class Meta:
        model = Schedule
        fields = EDITABLE

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["expected_version"].initial = (
            0 if self.instance._state.adding else self.instance.version
        )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if "options" in cleaned:
            cleaned["options"] = cleaned["options"] or {}
        if not self.instance._state.adding:
            current = Schedule.objects.filter(pk=self.instance.pk).values_list("version", flat=True)
            if cleaned.get("expected_version") != current.first():
                raise forms.ValidationError(
                    "Someone changed this schedule while you were editing it; reload the page "
                    "and apply your change again.",
                    code="stale_version",
                )
        if any(name in self.errors for name in SEMANTIC_FIELDS):
            return cleaned  # a field is already refused (or missing): the definition is incomplete
        values = {name: cleaned.get(name) for name in SEMANTIC_FIELDS if name in cleaned}
        values["kwargs"] = values.get("kwargs") or {}
        try:
            now = timezone.now()
            timing = validate_definition(
                {**values, "anchor": values.get("anchor") or now.replace(microsecond=0)}
            )
            if next_after(timing, now) is None and "rule" in self.changed_data:
                raise ScheduleValidationError(
                    "rule", "the rule has no slot after now; pick a future time"
                )
        except ScheduleValidationError as exc:
            field = exc.field.split(".")[0]
            target = field if field in self.fields else None
            self.add_error(target, forms.ValidationError(exc.message, code=exc.code))
        return cleaned


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    form = ScheduleForm
    list_display = (
        "__str__",
        "task",
        "kind",
        "rule",
        "timezone",
        "status",
        "next_run_local",
        "version",
        "missed_count",
        "skipped_count",
    )
    list_filter = ("status", "kind", "mode", "misfire_policy", "overlap_policy")
    search_fields = ("name", "key", "task", "tenant")
    readonly_fields = (
        "id",
        "key",
        "status",
        "version",
        "next_run_at",
        "last_scheduled_for",
        "preview",
        "missed_count",
        "skipped_count",
        "caught_up_count",
        "occurrence_count",
        "last_error",
        "created_at",
        "updated_at",
    )
    actions = ("pause", "resume", "cancel")

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # deletes go through services.delete_schedule
        return actions

    @admin.display(description="next run (local)")
    def next_run_local(self, obj: Schedule) -> str:
        if obj.next_run_at is None:
            return "-"
        local = obj.next_run_at.astimezone(timing_for(obj).zone)
        return local.isoformat(sep=" ", timespec="minutes")

    @admin.display(description="next slots (local / UTC)")
    def preview(self, obj: Schedule) -> str:
        if obj.pk is None or obj.next_run_at is None:
            return "-"
        try:
            timing = timing_for(obj)
        except SchedulerError as exc:
            return str(exc)
        rows = []
        for slot, _local, note in iter_annotated(timing, obj.next_run_at - _TICK):
            local = slot.astimezone(timing.zone).isoformat(sep=" ", timespec="minutes")
            utc = slot.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
            rows.append((local, utc, f" — DST: {note}" if note else ""))
            if len(rows) >= PREVIEW_COUNT:
                break
        return format_html_join("", "<div>{} &nbsp; ({}){}</div>", rows)

    def get_readonly_fields(self, request: HttpRequest, obj: Schedule | None = None) -> Any:
        if obj is not None and is_code_declared(obj):
            return (*EDITABLE, *self.readonly_fields)
        return self.readonly_fields

    def has_delete_permission(self, request: HttpRequest, obj: Schedule | None = None) -> bool:
        return obj is None or not is_code_declared(obj)

    def save_model(self, request: HttpRequest, obj: Schedule, form: Any, change: bool) -> None:
        values = {name: form.cleaned_data[name] for name in EDITABLE if name in form.cleaned_data}
        try:
            if change:
                changed = {name: values[name] for name in form.changed_data if name in values}
                saved = services.update_schedule(
                    obj.pk, expected_version=form.cleaned_data["expected_version"], **changed
                )
            else:
                saved = services.create_schedule(**values)
        except SchedulerError as exc:  # a race since the form was checked (e.g. StaleVersion)
            self.message_user(request, f"Not saved: {exc}", messages.ERROR)
            return
        obj.pk = saved.pk
        obj.refresh_from_db()

    def delete_model(self, request: HttpRequest, obj: Schedule) -> None:
        outcome = services.delete_schedule(obj.pk)
        if outcome == "cancelled":
            self.message_user(request, f"{obj} has history: it was cancelled instead of deleted")

    @admin.action(description="Pause selected schedules")
    def pause(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        self._each(request, queryset, services.pause_schedule, "paused")

    @admin.action(description="Resume selected schedules (missed slots follow the misfire policy)")
    def resume(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        now = timezone.now()
        for schedule in queryset:
            preview = services.preview_resume(schedule, now)
            if preview.count:
                self.message_user(
                    request, f"{schedule}: resuming creates {preview.count} occurrence(s)"
                )
        self._each(request, queryset, services.resume_schedule, "resumed")

    @admin.action(description="Cancel selected schedules (history kept)")
    def cancel(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        self._each(request, queryset, services.cancel_schedule, "cancelled")

    def _each(
        self, request: HttpRequest, queryset: QuerySet[Schedule], verb: Any, done: str
    ) -> None:
        count = 0
        for schedule in queryset:
            try:
                verb(schedule.pk)
                count += 1
            except SchedulerError as exc:
                self.message_user(request, f"{schedule}: {exc}", messages.ERROR)
        self.message_user(request, f"{count} schedule(s) {done}")


@admin.register(Occurrence)
class OccurrenceAdmin(admin.ModelAdmin):
    """Machine-written rows: read-only, with a replay action for the dead letters."""

    list_display = (
        "schedule",
        "scheduled_for",
        "trigger",
        "state",
        "reason",
        "attempts",
        "dispatched_at",
        "finished_at",
    )
    list_filter = ("state", "trigger", "reason")
    search_fields = ("idempotency_key", "task", "id")
    date_hierarchy = "scheduled_for"
    actions = ("replay",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Occurrence | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Occurrence | None = None) -> bool:
        return False

    @admin.action(description="Replay selected failed/expired/cancelled occurrences")
    def replay(self, request: HttpRequest, queryset: QuerySet[Occurrence]) -> None:
        replayed = 0
        for occurrence in queryset:
            try:
                services.replay_occurrence(occurrence.pk)
                replayed += 1
            except SchedulerError as exc:
                self.message_user(request, str(exc), messages.ERROR)
        self.message_user(request, f"{replayed} occurrence(s) replayed")
