"""Confirmation pages: each action shows its consequences first and writes only on confirm.

Every page checks its own permission (403) and the user's tenants (404 through the scoped
queryset): pause and resume need ``pause_schedule``, run now and backfill ``run_schedule``,
cancel and undo ``change_schedule``. Code-declared schedules allow pause, resume, run now
and backfill only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from scheduler_app import services
from scheduler_app.admin.display import local_and_utc_text, zone_of
from scheduler_app.admin.operations import resume_summary
from scheduler_app.errors import SchedulerError, ScheduleValidationError
from scheduler_app.models import (
    OPEN_STATES,
    Occurrence,
    OverlapPolicy,
    Schedule,
    ScheduleOrigin,
    ScheduleStatus,
)
from scheduler_app.services.operator import backfill_max

OBJECT_ACTIONS = ("pause", "resume", "run", "backfill", "cancel", "restore")
PERMISSION = {
    "pause": "scheduler_app.pause_schedule",
    "resume": "scheduler_app.pause_schedule",
    "run": "scheduler_app.run_schedule",
    "backfill": "scheduler_app.run_schedule",
    "cancel": "scheduler_app.change_schedule",
    "restore": "scheduler_app.change_schedule",
}
TITLE = {
    "pause": "Pause",
    "resume": "Resume",
    "run": "Run now",
    "backfill": "Backfill",
    "cancel": "Cancel",
    "restore": "Undo cancel",
}
CODE_ALLOWED = ("pause", "resume", "run", "backfill")
STATUS_NEEDED = {
    "pause": (ScheduleStatus.ACTIVE,),
    "resume": (ScheduleStatus.PAUSED,),
    "run": (ScheduleStatus.ACTIVE, ScheduleStatus.PAUSED, ScheduleStatus.COMPLETED),
    "backfill": (ScheduleStatus.ACTIVE, ScheduleStatus.PAUSED, ScheduleStatus.COMPLETED),
    "cancel": (ScheduleStatus.ACTIVE, ScheduleStatus.PAUSED, ScheduleStatus.COMPLETED),
    "restore": (ScheduleStatus.CANCELLED,),
}


def allowed(request: HttpRequest, schedule: Schedule, action: str) -> bool:
    if schedule.origin == ScheduleOrigin.CODE and action not in CODE_ALLOWED:
        return False
    return bool(request.user.has_perm(PERMISSION[action]))


def buttons_for(model_admin: Any, request: HttpRequest, schedule: Schedule) -> list[dict[str, str]]:
    """The change page's action links the user may follow in the schedule's state."""
    return [
        {
            "url": reverse(f"admin:scheduler_app_schedule_{action}", args=[schedule.pk]),
            "label": TITLE[action],
            "name": action,
        }
        for action in OBJECT_ACTIONS
        if schedule.status in STATUS_NEEDED[action] and allowed(request, schedule, action)
    ]


@dataclass
class Page:
    """What a confirmation page shows and which form it carries."""

    action: str
    schedules: list[Schedule]
    consequences: dict[Any, list[str]] = field(default_factory=dict)
    form: forms.Form | None = None
    errors: list[str] = field(default_factory=list)
    confirm_label: str = "Confirm"
    stage: str = "confirm"
    hidden: dict[str, str] = field(default_factory=dict)


def object_action(
    model_admin: Any, request: HttpRequest, object_id: str, action: str
) -> HttpResponse:
    try:
        schedule = model_admin.get_queryset(request).filter(pk=object_id).first()
    except (ValueError, ValidationError):
        schedule = None
    if schedule is None:  # another tenant's schedule answers like a missing one
        raise Http404("no such schedule")
    if not allowed(request, schedule, action):
        raise PermissionDenied
    return HANDLERS[action](model_admin, request, [schedule])


def confirm(model_admin: Any, request: HttpRequest, queryset: Any, action: str) -> Any:
    """A changelist action: the same page for every selected schedule."""
    schedules = list(queryset)
    if not all(allowed(request, s, action) for s in schedules):
        raise PermissionDenied
    return HANDLERS[action](model_admin, request, schedules)


def _confirmed(request: HttpRequest) -> bool:
    return request.method == "POST" and "confirm" in request.POST


def _render(model_admin: Any, request: HttpRequest, page: Page) -> TemplateResponse:
    opts = model_admin.model._meta
    selected = request.POST.getlist("_selected_action") if "action" in request.POST else []
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": opts,
        "title": f"{TITLE[page.action]}: are you sure?",
        "page": page,
        "rows": [(s, page.consequences.get(s.pk, [])) for s in page.schedules],
        "bulk_action": request.POST.get("action", ""),
        "selected": selected,
    }
    return TemplateResponse(request, "admin/scheduler_app/schedule/confirm.html", context)


def _done(request: HttpRequest, schedules: list[Schedule]) -> HttpResponseRedirect:
    if len(schedules) == 1 and "action" not in request.POST:
        return HttpResponseRedirect(
            reverse("admin:scheduler_app_schedule_change", args=[schedules[0].pk])
        )
    return HttpResponseRedirect(reverse("admin:scheduler_app_schedule_changelist"))


def _who(request: HttpRequest) -> str:
    return str(request.user.get_username())


# -- pause ---------------------------------------------------------------------------------


class NoteForm(forms.Form):
    note = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
        help_text="Why (shown on the schedule page and in the list).",
    )


def pause(model_admin: Any, request: HttpRequest, schedules: list[Schedule]) -> HttpResponse:
    form = NoteForm(request.POST if _confirmed(request) else None)
    if _confirmed(request) and form.is_valid():
        for schedule in schedules:
            try:
                services.pause_schedule(
                    schedule.pk, note=form.cleaned_data["note"], by=_who(request)
                )
            except SchedulerError as exc:
                model_admin.message_user(request, f"{schedule}: {exc}", messages.ERROR)
        model_admin.message_user(request, f"{len(schedules)} schedule(s) paused")
        return _done(request, schedules)
    page = Page("pause", schedules, form=form, confirm_label="Pause")
    for schedule in schedules:
        waiting = _waiting(schedule)
        keep = schedule.on_pause == "keep"
        page.consequences[schedule.pk] = [
            "No new occurrences until it is resumed; slots missed meanwhile follow the misfire "
            f"policy ({schedule.misfire_policy}) on resume.",
            f"{waiting} occurrence(s) already waiting "
            + ("still run (on_pause = keep)." if keep else "are cancelled (on_pause = cancel)."),
        ]
    return _render(model_admin, request, page)


def _waiting(schedule: Schedule) -> int:
    return Occurrence.objects.filter(schedule=schedule, state__in=OPEN_STATES).count()


# -- resume --------------------------------------------------------------------------------


class ResumeForm(NoteForm):
    expected = forms.IntegerField(widget=forms.HiddenInput, min_value=0)
    confirm_over_max = forms.BooleanField(
        required=False, label="Yes, create that many occurrences (second confirmation)"
    )


def resume(model_admin: Any, request: HttpRequest, schedules: list[Schedule]) -> HttpResponse:
    now = timezone.now()
    summaries = {s.pk: resume_summary(s, now) for s in schedules}
    total = sum(summary.count for summary in summaries.values())
    limit = backfill_max()
    page = Page("resume", schedules, confirm_label="Resume")
    page.consequences = {pk: summary.lines for pk, summary in summaries.items()}
    form = ResumeForm(request.POST if _confirmed(request) else None, initial={"expected": total})
    if _confirmed(request) and form.is_valid():
        if form.cleaned_data["expected"] != total:
            page.errors.append(
                f"What resuming does changed since the page was shown ({total} occurrences "
                "now): check the list again and confirm."
            )
        elif total > limit and not form.cleaned_data["confirm_over_max"]:
            page.errors.append(
                f"Resuming creates {total} occurrences, more than SCHEDULER_BACKFILL_MAX "
                f"({limit}): tick the second confirmation to go ahead."
            )
        else:
            for schedule in schedules:
                try:
                    services.resume_schedule(
                        schedule.pk, note=form.cleaned_data["note"], by=_who(request)
                    )
                except SchedulerError as exc:
                    model_admin.message_user(request, f"{schedule}: {exc}", messages.ERROR)
            model_admin.message_user(
                request, f"{len(schedules)} schedule(s) resumed; {total} catch-up occurrence(s)"
            )
            return _done(request, schedules)
    form = (
        ResumeForm(initial={"expected": total}) if page.errors or not _confirmed(request) else form
    )
    if total <= limit:
        form.fields.pop("confirm_over_max")
    else:
        page.errors.append(
            f"This creates {total} occurrences, more than SCHEDULER_BACKFILL_MAX ({limit}): a "
            "second confirmation is needed."
        )
    page.form = form
    return _render(model_admin, request, page)


# -- run now -------------------------------------------------------------------------------


def parse_local(text: str, zone_name: str, name: str) -> datetime | None:
    """A ``datetime-local`` value read as wall time in the schedule's zone."""
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
    return value


class RunForm(forms.Form):
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
    form = RunForm(request.POST if _confirmed(request) else None)
    page = Page("run", schedules, form=form, confirm_label="Run now")
    if _confirmed(request) and form.is_valid():
        try:
            data = form.cleaned_data
            occurrence = services.run_now(
                schedule,
                user=request.user,
                reason=data["reason"],
                window_start=parse_local(data["window_start"], schedule.timezone, "window start"),
                window_end=parse_local(data["window_end"], schedule.timezone, "window end"),
                respect_overlap=data["respect_overlap"],
            )
        except (SchedulerError, forms.ValidationError) as exc:
            page.errors.append(_message(exc))
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
            return _done(request, schedules)
    open_count = _waiting(schedule)
    page.consequences[schedule.pk] = [
        "Creates one occurrence now with trigger 'manual', outside the rule (the next "
        "scheduled slot is not affected).",
        f"Overlap policy: {schedule.overlap_policy}; {open_count} occurrence(s) open now. "
        "Untick 'Respect the overlap policy' to run regardless.",
    ]
    return _render(model_admin, request, page)


def _message(exc: Exception) -> str:
    if isinstance(exc, ScheduleValidationError):
        return exc.message
    if isinstance(exc, forms.ValidationError):
        return " ".join(exc.messages)
    return str(exc)


# -- backfill ------------------------------------------------------------------------------


class BackfillForm(forms.Form):
    start = forms.CharField(widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))
    end = forms.CharField(widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))
    overlap = forms.ChoiceField(
        choices=OverlapPolicy.choices,
        initial=OverlapPolicy.BUFFER_ALL,
        help_text="How the new occurrences share the worker (buffer all: one after another).",
    )
    reason = forms.CharField(required=False, max_length=2000)
    confirm_over_max = forms.BooleanField(
        required=False, label="Yes, more than SCHEDULER_BACKFILL_MAX (second confirmation)"
    )


def backfill(model_admin: Any, request: HttpRequest, schedules: list[Schedule]) -> HttpResponse:
    schedule = schedules[0]
    posted = request.method == "POST" and ("plan" in request.POST or "confirm" in request.POST)
    form = BackfillForm(request.POST if posted else None)
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
                done = _backfill(schedule, request, form.cleaned_data, dry_run=False)
                model_admin.message_user(
                    request,
                    f"Backfill: {done.created} occurrence(s) created, {done.existing} existed",
                )
                return _done(request, schedules)
        except (SchedulerError, forms.ValidationError) as exc:
            page.errors.append(_message(exc))
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
    return _render(model_admin, request, page)


def _backfill(
    schedule: Schedule, request: HttpRequest, data: dict[str, Any], *, dry_run: bool
) -> Any:
    start = parse_local(data["start"], schedule.timezone, "start")
    end = parse_local(data["end"], schedule.timezone, "end")
    if start is None or end is None:
        raise forms.ValidationError("give a start and an end")
    return services.backfill(
        schedule,
        start=start,
        end=end,
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
        f"First: {local_and_utc_text(plan.first, schedule.timezone)}; "
        f"last: {local_and_utc_text(plan.last, schedule.timezone)}.",
        f"Estimated cost: {cost}. Overlap policy for these: {plan.overlap}.",
    ]


# -- cancel and undo -----------------------------------------------------------------------


def cancel(model_admin: Any, request: HttpRequest, schedules: list[Schedule]) -> HttpResponse:
    if _confirmed(request):
        for schedule in schedules:
            try:
                services.cancel_schedule(schedule.pk)
            except SchedulerError as exc:
                model_admin.message_user(request, f"{schedule}: {exc}", messages.ERROR)
                continue
            undo = reverse("admin:scheduler_app_schedule_restore", args=[schedule.pk])
            model_admin.message_user(
                request, format_html('{} cancelled. <a href="{}">Undo</a>', schedule, undo)
            )
        return _done(request, schedules)
    page = Page("cancel", schedules, confirm_label="Cancel the schedule(s)")
    for schedule in schedules:
        page.consequences[schedule.pk] = [
            "No future occurrences; its history is kept.",
            f"{_waiting(schedule)} open occurrence(s): those not started yet are cancelled, a "
            "running one finishes.",
            "You can undo this: the schedule then comes back paused.",
        ]
    return _render(model_admin, request, page)


def restore(model_admin: Any, request: HttpRequest, schedules: list[Schedule]) -> HttpResponse:
    schedule = schedules[0]
    if _confirmed(request):
        try:
            services.restore_schedule(schedule, user=request.user)
        except SchedulerError as exc:
            model_admin.message_user(request, str(exc), messages.ERROR)
        else:
            model_admin.message_user(request, f"{schedule} restored (paused): resume it to run")
        return _done(request, schedules)
    page = Page("restore", schedules, confirm_label="Undo the cancel")
    page.consequences[schedule.pk] = [
        "The schedule comes back paused, so nothing runs until you resume it (the resume page "
        "shows what catching up would run).",
        "Occurrences the cancel stopped stay cancelled; replay any of them to run it.",
    ]
    return _render(model_admin, request, page)


HANDLERS = {
    "pause": pause,
    "resume": resume,
    "run": run,
    "backfill": backfill,
    "cancel": cancel,
    "restore": restore,
}
