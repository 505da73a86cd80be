"""The run now and backfill pages: dates typed in the schedule's zone, checked as fields (a
year-1 or year-9999 date is a field error, never an overflow), then the service decides."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html

from scheduler_app import services
from scheduler_app.admin.display import instant_text, zone_of
from scheduler_app.admin.pages import SERVICE_ERRORS, Page, confirmed, done, error_text, render
from scheduler_app.models import OPEN_STATES, Occurrence, OverlapPolicy, Schedule
from scheduler_app.services.backfills import backfill_max

EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
LATEST = datetime(9000, 1, 1, tzinfo=UTC)
"""Dates a run window or a backfill may name: far wider than any real use, and far enough
from ``datetime``'s limits (years 1 and 9999) that no zone offset or slot search overflows."""


def parse_local(text: str, zone_name: str, name: str) -> datetime | None:
    """A ``datetime-local`` value read as wall time in the schedule's zone (None if empty).

    Raises ``forms.ValidationError`` saying what to write for anything else."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise forms.ValidationError(
            f"{name}: {text!r} is not a date and time; write YYYY-MM-DD HH:MM"
        ) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=zone_of(zone_name))
    try:
        in_range = EARLIEST <= value.astimezone(UTC) < LATEST
    except (OverflowError, ValueError):
        in_range = False
    if not in_range:
        raise forms.ValidationError(
            f"{name}: {text!r} is out of range; write a date between "
            f"{EARLIEST:%Y-%m-%d} and {LATEST.year - 1}-12-31"
        )
    return value


class ZonedForm(forms.Form):
    """A form whose date fields are wall times in the schedule's zone."""

    local_fields: tuple[str, ...] = ()

    def __init__(self, *args: Any, zone: str = "UTC", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.zone = zone

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        for name in self.local_fields:
            if name in cleaned:
                try:
                    cleaned[name] = parse_local(cleaned[name], self.zone, name.replace("_", " "))
                except forms.ValidationError as exc:
                    self.add_error(name, exc)
        return cleaned


# -- run now -------------------------------------------------------------------------------


class RunForm(ZonedForm):
    local_fields = ("window_start", "window_end")
    reason = forms.CharField(required=False, max_length=2000, help_text="Why (recorded).")
    window_start = forms.CharField(
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        help_text="Optional business window the run covers (local time of the schedule).",
    )
    window_end = forms.CharField(
        required=False, widget=forms.DateTimeInput(attrs={"type": "datetime-local"})
    )
    respect_overlap = forms.BooleanField(
        required=False, initial=True, label="Respect the overlap policy"
    )


def run(model_admin: Any, request: HttpRequest, schedules: list[Schedule]) -> HttpResponse:
    schedule = schedules[0]
    form = RunForm(request.POST if confirmed(request) else None, zone=schedule.timezone)
    page = Page("run", schedules, form=form, confirm_label="Run now")
    if confirmed(request) and form.is_valid():
        data = form.cleaned_data
        try:
            occurrence = services.run_now(
                schedule,
                user=request.user,
                reason=data["reason"],
                window_start=data["window_start"],
                window_end=data["window_end"],
                respect_overlap=data["respect_overlap"],
            )
        except SERVICE_ERRORS as exc:
            page.errors.append(error_text(exc))
        else:
            url = reverse("admin:scheduler_app_occurrence_change", args=[occurrence.pk])
            model_admin.message_user(
                request,
                format_html(
                    'Run requested: <a href="{}">occurrence {}</a> is {}.',
                    url,
                    occurrence.pk,
                    occurrence.state,
                ),
            )
            return done(request, schedules)
    open_count = Occurrence.objects.filter(schedule=schedule, state__in=OPEN_STATES).count()
    page.consequences[schedule.pk] = [
        "Creates one occurrence now with trigger 'manual', outside the rule (the next "
        "scheduled slot is not affected).",
        f"Overlap policy: {schedule.overlap_policy}; {open_count} occurrence(s) open now. "
        "Untick 'Respect the overlap policy' to run regardless.",
    ]
    return render(model_admin, request, page)


# -- backfill ------------------------------------------------------------------------------


class BackfillForm(ZonedForm):
    local_fields = ("start", "end")
    start = forms.CharField(widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))
    end = forms.CharField(widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))
    overlap = forms.ChoiceField(
        choices=OverlapPolicy.choices,
        initial=OverlapPolicy.BUFFER_ALL,
        help_text="How the new occurrences share the worker (buffer all: one after another).",
    )
    reason = forms.CharField(required=False, max_length=2000, help_text="Why (recorded).")
    confirm_over_max = forms.BooleanField(
        required=False, label="Yes, more than SCHEDULER_BACKFILL_MAX (second confirmation)"
    )


def backfill(model_admin: Any, request: HttpRequest, schedules: list[Schedule]) -> HttpResponse:
    schedule = schedules[0]
    posted = request.method == "POST" and ("plan" in request.POST or "confirm" in request.POST)
    form = BackfillForm(request.POST if posted else None, zone=schedule.timezone)
    page = Page(
        "backfill", schedules, form=form, confirm_label="Show what it creates", stage="plan"
    )
    page.consequences[schedule.pk] = [
        f"Times are local to the schedule's zone, {schedule.timezone}. Slots of the current "
        "rule in the range get an occurrence with trigger 'backfill'; slots that have one "
        "already (any trigger) are left alone."
    ]
    if posted and form.is_valid():
        try:
            plan = _backfill(schedule, request, form.cleaned_data, dry_run=True)
            if "confirm" in request.POST and (
                not plan.over_max or form.cleaned_data["confirm_over_max"]
            ):
                made = _backfill(schedule, request, form.cleaned_data, dry_run=False)
                model_admin.message_user(
                    request,
                    f"Backfill: {made.created} occurrence(s) created, {made.existing} existed",
                )
                return done(request, schedules)
        except SERVICE_ERRORS as exc:
            page.errors.append(error_text(exc))
        else:
            page.consequences[schedule.pk] += _plan_lines(plan, schedule)
            page.stage, page.confirm_label = "confirm", f"Create {plan.new} occurrence(s)"
            if plan.over_max:
                page.errors.append(
                    f"{plan.new} occurrences is more than SCHEDULER_BACKFILL_MAX "
                    f"({backfill_max()}): tick the second confirmation."
                )
    if not any("SCHEDULER_BACKFILL_MAX" in error for error in page.errors):
        form.fields.pop("confirm_over_max", None)  # only asked for when it is needed
    return render(model_admin, request, page)


def _backfill(
    schedule: Schedule, request: HttpRequest, data: dict[str, Any], *, dry_run: bool
) -> Any:
    return services.backfill(
        schedule,
        start=data["start"],
        end=data["end"],
        user=request.user,
        reason=data["reason"],
        overlap=data["overlap"],
        confirm_over_max=dry_run or bool(data.get("confirm_over_max")),
        dry_run=dry_run,
    )


def _plan_lines(plan: Any, schedule: Schedule) -> list[str]:
    cost = (
        "not set (set the schedule's cost estimate)"
        if plan.estimated_cost is None
        else (f"{plan.estimated_cost:g}")
    )
    return [
        f"Slots in the range: {plan.count}; already have an occurrence: {plan.existing}; "
        f"new: {plan.new}.",
        f"First: {instant_text(plan.first, schedule.timezone)}; "
        f"last: {instant_text(plan.last, schedule.timezone)}.",
        f"Estimated cost: {cost}. Overlap policy for these: {plan.overlap}.",
    ]
