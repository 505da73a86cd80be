"""The schedule form's event part: the ``endpoint`` choice beside the task.

A schedule whose task is ``event:<type>`` is delivered to an endpoint of
``SCHEDULER_EVENT_ENDPOINTS`` (docs/events.md). The form shows the configured names as a choice
(never a URL or a secret: those stay in the settings) and stores the choice as
``options.endpoint``; the endpoint is checked for the schedule's tenant and event type as the
services check it, and its error is shown on this field.
"""

from __future__ import annotations

from typing import Any

from django import forms

from scheduler_app.errors import ScheduleValidationError
from scheduler_app.handoff.allowlist import EVENT_PREFIX
from scheduler_app.handoff.endpoints import EndpointError, check_event_route, endpoints
from scheduler_app.safety.tenancy import allowed_tenants

FIELD = "endpoint"
TASK_HELP = (
    "One of the schedulable tasks (start typing), or event:<type> (e.g. "
    "event:contract.deadline_reached) to send a signed event to an endpoint."
)


def endpoint_field() -> forms.ChoiceField:
    """The choice of endpoint (declared on the form; its choices are set per request)."""
    return forms.ChoiceField(
        required=False,
        label="Event endpoint",
        help_text="For event:<type> tasks: where the event is sent (SCHEDULER_EVENT_ENDPOINTS). "
        "Blank: the only endpoint the tenant may use.",
    )


def configure(form: forms.ModelForm, instance: Any, user: Any) -> None:
    """Set the endpoint's choices (those that serve a tenant ``user`` may see: other tenants'
    endpoint names are not shown) and, on a change page, its current value."""
    if FIELD not in form.fields:
        return
    tenants = allowed_tenants(user) if user is not None else None
    try:
        names = sorted(
            name
            for name, endpoint in endpoints().items()
            if tenants is None or endpoint.tenants is None or set(endpoint.tenants) & tenants
        )
    except EndpointError:
        names = []  # misconfigured: the check and the save say what is wrong
    current = (
        (instance.options or {}).get("endpoint") if isinstance(instance.options, dict) else None
    )
    if isinstance(current, str) and current not in names:
        names.append(current)  # a stored name the settings dropped: shown, then refused
    field = form.fields[FIELD]
    assert isinstance(field, forms.ChoiceField)
    field.choices = [("", "(the tenant's only endpoint)"), *((name, name) for name in names)]
    if isinstance(current, str):
        field.initial = current


def apply(form: forms.ModelForm, cleaned: dict[str, Any], tenant: str) -> None:
    """Store the chosen endpoint as ``options.endpoint`` of an event schedule and check it;
    refuse an endpoint on a task's schedule."""
    if FIELD not in cleaned or "task" not in cleaned:
        return
    chosen = cleaned.get(FIELD) or ""
    task = cleaned.get("task") or ""
    if not task.startswith(EVENT_PREFIX):
        if chosen:
            form.add_error(FIELD, "Only event:<type> tasks are sent to an endpoint; clear it.")
        return
    if not isinstance(cleaned.get("options") or {}, dict):
        return  # not an object: refused on the options field by the definition's check
    options = dict(cleaned.get("options") or {})
    options.pop("endpoint", None)
    if chosen:
        options["endpoint"] = chosen
    cleaned["options"] = options
    try:
        check_event_route(task, options, tenant)
    except ScheduleValidationError as exc:
        form.add_error(FIELD, forms.ValidationError(exc.message, code=exc.code))
