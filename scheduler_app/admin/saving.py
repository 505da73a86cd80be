"""Saving the schedule form through the services, and the History line of what really changed.

The builder's inputs (``repeat``, ``weekdays``, ``at_times`` ...) are not stored: they only
write ``kind`` and ``rule``, so Django's ``form.changed_data`` lists them whenever the page
rendered them differently from what was posted, and an edit of the kwargs alone read "Changed
Repeat, At times and Kwargs". The History line is made from the stored row instead: the fields
whose values differ before and after the save.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest
from django.utils import translation

from scheduler_app import services
from scheduler_app.admin.forms import EDITABLE
from scheduler_app.errors import SchedulerError
from scheduler_app.models import SEMANTIC_FIELDS, Schedule

STORED = (*EDITABLE, "cost_estimate")
"""The form's fields that are columns of the schedule (what the History line compares)."""
CHANGED_ATTRIBUTE = "_sched_changed_fields"


def stored_values(pk: Any) -> dict[str, Any]:
    return Schedule.objects.filter(pk=pk).values(*STORED).first() or {}


def save_schedule(
    model_admin: Any, request: HttpRequest, obj: Schedule, form: Any, change: bool
) -> None:
    """Create or update through the services; a refusal since the form was checked (e.g.
    ``StaleVersion``) is a message and nothing is saved."""
    values = {name: form.cleaned_data[name] for name in STORED if name in form.cleaned_data}
    before = stored_values(obj.pk) if change else {}
    try:
        if change:
            saved = _updated(obj.pk, request, form, _changed(values, before))
        elif form.definition is not None:  # checked by the form: not parsed again
            saved = services.create_schedule(
                user=request.user, definition=form.definition, **_beside(values)
            )
        else:
            saved = services.create_schedule(user=request.user, **values)
    except SchedulerError as exc:
        model_admin.message_user(request, f"Not saved: {exc}", messages.ERROR)
        model_admin.refuse(obj)
        return
    after = stored_values(saved.pk)
    setattr(obj, CHANGED_ATTRIBUTE, [name for name in STORED if before.get(name) != after[name]])
    obj.pk = saved.pk
    obj.refresh_from_db()
    for warning in getattr(form, "warnings", []):
        model_admin.message_user(request, warning, messages.WARNING)


def _changed(values: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """The form's values that differ from the stored ones (an owner by primary key)."""
    changed = {name: value for name, value in values.items() if before.get(name) != value}
    changed.pop("owner", None)
    if "owner" in values and getattr(values["owner"], "pk", None) != before.get("owner"):
        changed["owner"] = values["owner"]
    return changed


def _beside(values: dict[str, Any]) -> dict[str, Any]:
    """The values that are not part of a definition (name, tenant, owner, cost estimate)."""
    return {name: value for name, value in values.items() if name not in SEMANTIC_FIELDS}


def _updated(pk: Any, request: HttpRequest, form: Any, changed: dict[str, Any]) -> Schedule:
    """The edit through ``update_schedule``: the whole definition as the form checked it (not
    parsed again; the services store the fields of it that differ, a new version when any
    does), with the other fields that changed."""
    if form.definition is not None:
        changed = _beside(changed)
    return services.update_schedule(
        pk,
        expected_version=form.cleaned_data["expected_version"],
        definition=form.definition,
        user=request.user,
        reason=form.cleaned_data.get("reason", ""),
        **changed,
    )


def change_message(form: Any, add: bool) -> list[dict[str, Any]]:
    """Django's change message, listing only the stored fields whose values changed."""
    if add:
        return [{"added": {}}]
    names = getattr(form.instance, CHANGED_ATTRIBUTE, [])
    if not names:
        return []
    with translation.override(None):
        labels = [
            str(form.fields[name].label or name) if name in form.fields else name for name in names
        ]
    return [{"changed": {"fields": labels}}]
