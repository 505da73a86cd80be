"""Confirmation pages: each action shows its consequences first and writes only on confirm.

The pages decide nothing about permissions, tenants or approval: every write goes through the
service layer with the acting user (``request.user``) and the operator's reason, and a refusal
is shown as a message. ``allowed`` and ``STATUS_NEEDED`` only choose which buttons are shown.
Another tenant's schedule answers 404 because the admin's queryset is scoped by tenant.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from scheduler_app import services
from scheduler_app.admin import approving, running
from scheduler_app.admin.operations import resume_summary
from scheduler_app.admin.pages import (
    TITLE,
    Page,
    attempt,
    attempt_each,
    confirmed,
    done,
    render,
    why_field,
)
from scheduler_app.models import OPEN_STATES, Occurrence, Schedule, ScheduleOrigin, ScheduleStatus
from scheduler_app.safety.approval import PERMISSION as APPROVE_PERMISSION
from scheduler_app.safety.approval import needs_approval
from scheduler_app.services.backfills import backfill_max

OBJECT_ACTIONS = ("pause", "resume", "run", "backfill", "cancel", "restore", "approve")
PERMISSION = {
    "pause": "scheduler_app.pause_schedule",
    "resume": "scheduler_app.pause_schedule",
    "run": "scheduler_app.run_schedule",
    "backfill": "scheduler_app.run_schedule",
    "cancel": "scheduler_app.change_schedule",
    "restore": "scheduler_app.change_schedule",
    "approve": APPROVE_PERMISSION,
}
CODE_ALLOWED = ("pause", "resume", "run", "backfill", "approve")
STATUS_NEEDED = {
    "pause": (ScheduleStatus.ACTIVE,),
    "resume": (ScheduleStatus.PAUSED,),
    "run": (ScheduleStatus.ACTIVE, ScheduleStatus.PAUSED, ScheduleStatus.COMPLETED),
    "backfill": (ScheduleStatus.ACTIVE, ScheduleStatus.PAUSED, ScheduleStatus.COMPLETED),
    "cancel": (ScheduleStatus.ACTIVE, ScheduleStatus.PAUSED, ScheduleStatus.COMPLETED),
    "restore": (ScheduleStatus.CANCELLED,),
    "approve": (ScheduleStatus.AWAITING_APPROVAL,),
}
"""Which buttons a schedule's page shows in each state (hiding only: the services decide)."""


def allowed(request: HttpRequest, schedule: Schedule, action: str) -> bool:
    """Whether to show the button (the service decides when it is used)."""
    if schedule.origin == ScheduleOrigin.CODE and action not in CODE_ALLOWED:
        return False
    return may(request, action)


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


def object_action(
    model_admin: Any, request: HttpRequest, object_id: str, action: str
) -> HttpResponse:
    try:
        schedule = model_admin.get_queryset(request).filter(pk=object_id).first()
    except (ValueError, ValidationError):
        schedule = None
    if schedule is None:  # another tenant's schedule answers like a missing one
        raise Http404("no such schedule")
    _check_permission(request, action)
    return HANDLERS[action](model_admin, request, [schedule])


def _check_permission(request: HttpRequest, action: str) -> None:
    """A person without the action's permission gets no page for it (not even the summary of
    what it would do, which can cost a search): 403, as Django's own views answer."""
    if not may(request, action):
        raise PermissionDenied(f"{TITLE[action]} needs the permission {PERMISSION[action]!r}")


def may(request: HttpRequest, action: str) -> bool:
    """Whether the user holds ``action``'s permission (a ``ModelAdmin``'s ``has_*_permission``)."""
    return bool(request.user.has_perm(PERMISSION[action]))


def bulk_action(action: str, description: str, permission: str) -> Any:
    """A changelist action ``<action>_selected``: the action's page for every selected
    schedule (approve: each at the version the page shows)."""

    @admin.action(description=description, permissions=[permission])
    def selected(model_admin: Any, request: HttpRequest, queryset: Any) -> Any:
        return HANDLERS[action](model_admin, request, list(queryset))

    selected.__name__ = f"{action}_selected"
    return selected


def missing_selection(model: Any, request: HttpRequest, queryset: Any) -> int:
    """How many posted ids are not in ``queryset`` (the rows this user sees in the list):
    another tenant's, deleted meanwhile, or filtered out. Call after ``invalid_selection``."""
    if request.POST.get("select_across", "0") != "0":
        return 0
    posted = {
        str(model._meta.pk.to_python(value))
        for value in request.POST.getlist(helpers.ACTION_CHECKBOX_NAME)
    }
    found = {str(pk) for pk in queryset.filter(pk__in=posted).values_list("pk", flat=True)}
    return len(posted - found)


def invalid_selection(model: Any, request: HttpRequest) -> list[str]:
    """The posted ``_selected_action`` values that are not primary keys of ``model``."""
    if request.method != "POST" or "action" not in request.POST:
        return []
    bad = []
    for value in request.POST.getlist(helpers.ACTION_CHECKBOX_NAME):
        try:
            model._meta.pk.to_python(value)
        except ValidationError:
            bad.append(value)
    return bad


class SelectionGuard:
    """A ``ModelAdmin`` mixin: a bulk action posted with a selection it cannot act on answers
    with a message, never a 500: values that are not ids (``_selected_action=nope``; Django
    filters ``pk__in`` with the raw values before any action runs) and ids outside the rows
    the user sees (another tenant's, or deleted meanwhile) are named in a message; the action
    runs on the rest, or the list is shown again when nothing is left."""

    model: Any

    def response_action(
        self, request: HttpRequest, queryset: Any, action_location: Any = None
    ) -> Any:
        """``action_location``: Django 6.1's (the list or the change form); older Django has
        none, and it is passed on only when given."""
        bad = invalid_selection(self.model, request)
        if bad:
            shown = ", ".join(repr(value) for value in bad[:3])
            self.message_user(  # type: ignore[attr-defined]
                request,
                f"The selection {shown} is not an id of a {self.model._meta.verbose_name}: "
                "nothing was changed; tick the rows in the list and try again.",
                messages.ERROR,
            )
            return HttpResponseRedirect(request.get_full_path())
        return self._answer_missing(request, queryset, location_kwargs(action_location))

    def _answer_missing(self, request: HttpRequest, queryset: Any, location: dict[str, Any]) -> Any:
        """Selected rows that are gone or not this user's: a message, then the action on the
        rest (or the list again when none is left). Never an action on an empty selection."""
        missing = missing_selection(self.model, request, queryset)  # none posted: 0, no query
        if missing:
            name = self.model._meta.verbose_name_plural
            chosen = len(request.POST.getlist(helpers.ACTION_CHECKBOX_NAME))
            left = (
                "nothing was changed" if missing == chosen else "the action goes on with the rest"
            )
            self.message_user(  # type: ignore[attr-defined]
                request,
                f"{missing} selected {name} no longer exist or are not yours to change: "
                f"{left}; reload the list and try again.",
                messages.WARNING if missing < chosen else messages.ERROR,
            )
            if missing == chosen:
                return HttpResponseRedirect(request.get_full_path())
        return super().response_action(request, queryset, **location)  # type: ignore[misc]


def location_kwargs(action_location: Any) -> dict[str, Any]:
    """Django 6.1 names where an action runs (``action_location``); Django 5.2 and 6.0 take
    no such argument, so it is passed on only when Django gave one."""
    return {} if action_location is None else {"action_location": action_location}


def _waiting(schedule: Schedule) -> int:
    return Occurrence.objects.filter(schedule=schedule, state__in=OPEN_STATES).count()


class NoteForm(forms.Form):
    note = why_field("Why (shown on the schedule page and in the list; kept in the audit).")


class ReasonForm(forms.Form):
    reason = why_field("Why (kept in the schedule's audit trail with your user name).")


# -- pause ---------------------------------------------------------------------------------


def pause(model_admin: Any, request: HttpRequest, schedules: list[Schedule]) -> HttpResponse:
    form = NoteForm(request.POST if confirmed(request) else None)
    if confirmed(request) and form.is_valid():
        note = form.cleaned_data["note"]
        paused = attempt_each(model_admin, request, schedules, services.pause_schedule, note=note)
        model_admin.message_user(request, f"{paused} schedule(s) paused")
        return done(request, schedules)
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
    return render(model_admin, request, page)


# -- resume --------------------------------------------------------------------------------


class ResumeForm(NoteForm):
    expected = forms.IntegerField(widget=forms.HiddenInput, min_value=0)
    confirm_over_max = forms.BooleanField(
        required=False, label="Yes, create that many occurrences (second confirmation)"
    )


def _paused_why(schedule: Schedule) -> list[str]:
    if schedule.status != ScheduleStatus.PAUSED:
        return []
    who = f" by {schedule.paused_by}" if schedule.paused_by else ""
    note = f": {schedule.pause_note}" if schedule.pause_note else " (no note was given)"
    return [f"Paused{who}{note}"]


def resume(model_admin: Any, request: HttpRequest, schedules: list[Schedule]) -> HttpResponse:
    now = timezone.now()
    summaries = {s.pk: resume_summary(s, now) for s in schedules}
    total = sum(summary.count for summary in summaries.values())
    limit = backfill_max()
    page = Page("resume", schedules, confirm_label="Resume")
    page.consequences = {s.pk: _paused_why(s) + summaries[s.pk].lines for s in schedules}
    form = ResumeForm(request.POST if confirmed(request) else None, initial={"expected": total})
    if confirmed(request) and form.is_valid():
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
            note = form.cleaned_data["note"]
            resumed = attempt_each(
                model_admin, request, schedules, services.resume_schedule, note=note
            )
            model_admin.message_user(
                request, f"{resumed} schedule(s) resumed; up to {total} occurrence(s) created"
            )
            return done(request, schedules)
    if page.errors or not confirmed(request):
        form = ResumeForm(initial={"expected": total})
    if total <= limit:
        form.fields.pop("confirm_over_max")
    else:
        page.errors.append(
            f"This creates {total} occurrences, more than SCHEDULER_BACKFILL_MAX ({limit}): a "
            "second confirmation is needed."
        )
    page.form = form
    return render(model_admin, request, page)


# -- cancel and undo -----------------------------------------------------------------------


def cancel(model_admin: Any, request: HttpRequest, schedules: list[Schedule]) -> HttpResponse:
    form = ReasonForm(request.POST if confirmed(request) else None)
    if confirmed(request) and form.is_valid():
        reason = form.cleaned_data["reason"]
        for schedule in schedules:
            cancelled = attempt(
                model_admin, request, schedule, services.cancel_schedule, reason=reason
            )
            if cancelled is not None:
                undo = reverse("admin:scheduler_app_schedule_restore", args=[schedule.pk])
                model_admin.message_user(
                    request, format_html('{} cancelled. <a href="{}">Undo</a>', schedule, undo)
                )
        return done(request, schedules)
    page = Page("cancel", schedules, form=form, confirm_label="Cancel the schedule(s)")
    for schedule in schedules:
        page.consequences[schedule.pk] = [
            "No future occurrences; its history is kept.",
            f"{_waiting(schedule)} open occurrence(s): those not started yet are cancelled, a "
            "running one finishes.",
            "You can undo this: the schedule then comes back paused.",
        ]
    return render(model_admin, request, page)


def restore(model_admin: Any, request: HttpRequest, schedules: list[Schedule]) -> HttpResponse:
    schedule = schedules[0]
    form = ReasonForm(request.POST if confirmed(request) else None)
    if confirmed(request) and form.is_valid():
        reason = form.cleaned_data["reason"]
        restored = attempt(model_admin, request, schedule, services.restore_schedule, reason=reason)
        if restored is not None:
            model_admin.message_user(request, f"{schedule} restored (paused): resume it to run")
        return done(request, schedules)
    page = Page("restore", schedules, form=form, confirm_label="Undo the cancel")
    page.consequences[schedule.pk] = [
        "The schedule comes back paused, so nothing runs until you resume it (the resume page "
        "shows what catching up would run).",
        "Occurrences the cancel stopped stay cancelled; replay any of them to run it.",
    ]
    if needs_approval(schedule.task) and schedule.approved_version != schedule.version:
        page.consequences[schedule.pk].append(
            "Its current version was never approved: it needs approval before it runs."
        )
    return render(model_admin, request, page)


HANDLERS = {
    "pause": pause,
    "resume": resume,
    "run": running.run,
    "backfill": running.backfill,
    "cancel": cancel,
    "restore": restore,
    "approve": approving.approve,
}
