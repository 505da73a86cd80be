"""What every confirmation page shares: the page's content, rendering it, the redirect after
it, and turning the service layer's refusals into messages (never an HTTP 500).

The pages decide nothing about who may do what: the service they call does, with the acting
user, and its refusal is shown as a message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from scheduler_app.errors import SchedulerError, ScheduleValidationError
from scheduler_app.models import Schedule

SERVICE_ERRORS = (SchedulerError, PermissionError)
"""What a service raises on purpose: tenant and permission refusals (``TenantForbidden``,
``OperatorPermissionDenied``), bad input, a state that does not allow the action, a version
that moved on. Anything else is a bug and is left to surface as one."""
T = TypeVar("T")

TITLE = {
    "pause": "Pause",
    "resume": "Resume",
    "run": "Run now",
    "backfill": "Backfill",
    "cancel": "Cancel",
    "restore": "Undo cancel",
    "approve": "Approve",
    "replay": "Replay",
}


@dataclass
class Page:
    """What a confirmation page shows and which form it carries."""

    action: str
    schedules: list[Any]
    """What it acts on: schedules (occurrences, on the replay page)."""
    consequences: dict[Any, list[str]] = field(default_factory=dict)
    form: forms.Form | None = None
    errors: list[str] = field(default_factory=list)
    confirm_label: str = "Confirm"
    stage: str = "confirm"
    hidden: dict[str, str] = field(default_factory=dict)
    details: dict[Any, list[tuple[str, str]]] = field(default_factory=dict)
    """Per schedule, (label, value) rows shown as a table (what an approval approves)."""
    changes: dict[Any, tuple[str, list[tuple[str, str, str]]]] = field(default_factory=dict)
    """Per schedule, a heading and (field, before, now) rows (what changed since approved)."""


def confirmed(request: HttpRequest) -> bool:
    return request.method == "POST" and "confirm" in request.POST


def why_field(help_text: str = "", *, required: bool = False) -> forms.CharField:
    """A page's box for why the action is taken (optional unless ``required``)."""
    return forms.CharField(
        required=required,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
        help_text=help_text,
    )


def render(
    model_admin: Any, request: HttpRequest, page: Page, heading: Callable[[Any], Any] = str
) -> TemplateResponse:
    """The page, a row per object named by ``heading`` (its ``str``)."""
    opts = model_admin.model._meta
    selected = request.POST.getlist("_selected_action") if "action" in request.POST else []
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": opts,
        "title": f"{TITLE[page.action]}: are you sure?",
        "page": page,
        "rows": [
            (
                heading(s),
                page.details.get(s.pk, []),
                page.changes.get(s.pk, ("", [])),
                page.consequences.get(s.pk, []),
            )
            for s in page.schedules
        ],
        "bulk_action": request.POST.get("action", ""),
        "selected": selected,
    }
    return TemplateResponse(request, "admin/scheduler_app/schedule/confirm.html", context)


def done(request: HttpRequest, schedules: list[Schedule]) -> HttpResponseRedirect:
    """Back to the schedule's page (one schedule, from its page) or to the list."""
    if len(schedules) == 1 and "action" not in request.POST:
        return HttpResponseRedirect(
            reverse("admin:scheduler_app_schedule_change", args=[schedules[0].pk])
        )
    return HttpResponseRedirect(reverse("admin:scheduler_app_schedule_changelist"))


def error_text(exc: BaseException) -> str:
    if isinstance(exc, ScheduleValidationError):
        return exc.message
    if isinstance(exc, forms.ValidationError):
        return " ".join(exc.messages)
    return str(exc)


def attempt(
    model_admin: Any, request: HttpRequest, schedule: Schedule, service: Callable[..., T], **kw: Any
) -> T | None:
    """``service(schedule.pk, user=request.user, **kw)``, or None with the service's refusal
    shown as an error message."""
    try:
        return service(schedule.pk, user=request.user, **kw)
    except SERVICE_ERRORS as exc:
        model_admin.message_user(request, f"{schedule}: {error_text(exc)}", messages.ERROR)
        return None


def attempt_each(
    model_admin: Any,
    request: HttpRequest,
    schedules: list[Schedule],
    service: Callable[..., T],
    **kw: Any,
) -> int:
    """``attempt`` on each schedule; how many the service did not refuse."""
    return sum(1 for s in schedules if attempt(model_admin, request, s, service, **kw))


class RefusedSave:
    """A ``ModelAdmin`` mixin: a save its ``save_model`` left undone (``refuse(obj)``, after
    showing the service's message) is no success: no "added" message, no ``LogEntry``, and
    the form's page is shown again."""

    @staticmethod
    def refuse(obj: Any) -> None:
        obj._refused = True

    @staticmethod
    def refused(obj: Any) -> bool:
        return bool(getattr(obj, "_refused", False))

    def log_addition(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        return None if self.refused(obj) else super().log_addition(request, obj, message)  # type: ignore[misc]

    def log_change(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        return None if self.refused(obj) else super().log_change(request, obj, message)  # type: ignore[misc]

    def response_add(self, request: HttpRequest, obj: Any, post_url_continue: Any = None) -> Any:
        if self.refused(obj):
            return HttpResponseRedirect(request.get_full_path())
        return super().response_add(request, obj, post_url_continue)  # type: ignore[misc]

    def response_change(self, request: HttpRequest, obj: Any) -> Any:
        if self.refused(obj):
            return HttpResponseRedirect(request.get_full_path())
        return super().response_change(request, obj)  # type: ignore[misc]
