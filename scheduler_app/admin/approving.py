"""The approve page: what exactly is approved (every field of the version that changes what
runs or where it goes, ``reviewing``; the rule in words; the next runs), what changed since the
last approved version, a reason, and the version shown carried in the POST, so that an edit
made between the look and the click is refused (``StaleVersion``) instead of approved unseen.
With ``SCHEDULER_APPROVAL_REQUIRES_OTHER_PERSON`` the page says when the viewer made the
version (they cannot approve it); the service refuses it, and the refusal is a message.

Unlike the other action pages, the page itself is refused (403) to a user without
``approve_schedule``: it shows the whole definition of a version under review, and offers a
confirmation that could only ever be refused."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from scheduler_app import services
from scheduler_app.admin import display, reviewing
from scheduler_app.admin.pages import Page, attempt, confirmed, done, render, why_field
from scheduler_app.authoring.preview import preview_rows
from scheduler_app.definition.schedule import timing_for
from scheduler_app.errors import SchedulerError
from scheduler_app.models import Schedule, ScheduleStatus
from scheduler_app.safety.approval import PERMISSION, same_person_refusal
from scheduler_app.timing import TICK

NEXT_RUNS = 5


class ApproveForm(forms.Form):
    reason = why_field(
        "Why this version may run (kept in the schedule's audit trail with your user name "
        "and the version number).",
        required=True,
    )


def version_field(schedule: Schedule) -> str:
    return f"version_{schedule.pk}"


def approve(model_admin: Any, request: HttpRequest, schedules: list[Schedule]) -> HttpResponse:
    """Confirm, then approve each schedule at the version its page showed; the page (GET or
    POST, one schedule or a selection) is refused without the approve permission."""
    if not request.user.has_perm(PERMISSION):
        raise PermissionDenied(f"approving needs the permission {PERMISSION!r}")
    waiting = [s for s in schedules if s.status == ScheduleStatus.AWAITING_APPROVAL]
    others = len(schedules) - len(waiting)
    form = ApproveForm(request.POST if confirmed(request) else None)
    page = Page("approve", waiting, form=form, confirm_label="Approve these versions")
    if others:
        page.errors.append(
            f"{others} selected schedule(s) are not awaiting approval: left as they are."
        )
    if not waiting:
        why = page.errors[0] if page.errors else "no schedule was selected."
        model_admin.message_user(request, "Nothing to approve: " + why, messages.INFO)
        return done(request, schedules)
    if confirmed(request) and form.is_valid():
        approved = _approve_posted(model_admin, request, waiting, form.cleaned_data["reason"])
        model_admin.message_user(request, f"{approved} schedule(s) approved")
        return done(request, schedules)
    now = timezone.now()
    for schedule in waiting:
        page.hidden[version_field(schedule)] = str(schedule.version)
        page.details[schedule.pk] = what_is_approved(schedule, now)
        page.changes[schedule.pk] = reviewing.changes(schedule)
        refusal = same_person_refusal(schedule, schedule.version, request.user)
        if refusal:
            page.errors.append(f"{schedule}: you cannot approve it: {refusal}.")
        page.consequences[schedule.pk] = [
            f"Version {schedule.version} becomes active from the approval on; slots that "
            "passed while it waited are not run.",
            "If the schedule is edited before you confirm, nothing is approved: you are "
            "asked to look at the new version.",
        ]
    return render(model_admin, request, page)


def _approve_posted(
    model_admin: Any, request: HttpRequest, schedules: list[Schedule], reason: str
) -> int:
    approved = 0
    for schedule in schedules:
        version = _posted_version(request, schedule)
        if version is None:
            model_admin.message_user(
                request,
                f"{schedule}: the page did not say which version you looked at; open the "
                "approve page again and confirm there. Nothing was approved.",
                messages.ERROR,
            )
            continue
        result = attempt(
            model_admin,
            request,
            schedule,
            services.approve_schedule,
            version=version,
            reason=reason,
        )
        approved += result is not None
    return approved


def _posted_version(request: HttpRequest, schedule: Schedule) -> int | None:
    text = request.POST.get(version_field(schedule), "")
    return int(text) if text.isascii() and text.isdigit() and len(text) < 10 else None


def what_is_approved(schedule: Schedule, now: Any) -> list[tuple[str, str]]:
    """The version's definition as (label, text) rows: who and which, every field that
    changes what runs or where it goes (``reviewing.GROUPS``), the rule in words and the
    next runs."""
    owner = schedule.owner.get_username() if schedule.owner_id and schedule.owner else "-"
    return [
        ("schedule", f"{schedule} ({schedule.pk})"),
        ("tenant", schedule.tenant or "(no tenant)"),
        ("version", str(schedule.version)),
        ("owner (runs are checked against)", owner),
        *reviewing.version_rows(schedule),
        ("rule in words", display.rule_sentence(schedule)),
        ("next runs once approved", _next_runs(schedule, now)),
    ]


def _next_runs(schedule: Schedule, now: Any) -> str:
    try:
        rows = preview_rows(timing_for(schedule), now - TICK, NEXT_RUNS)
    except (SchedulerError, ArithmeticError, ValueError) as exc:
        return f"cannot be computed: {exc}"
    if not rows:
        return "none: the rule has no slot after now"
    return "\n".join(f"{row.as_display()['local']} ({row.as_display()['utc']})" for row in rows)
