"""The live preview: a JSON view behind the admin's permissions.

The page's script POSTs the form as it is (nothing saved); the view runs the admin's own form
(the same builder and the beat's ``timing_for``) in its preview mode and answers with the
English description, the next slots in local time and UTC with DST sentences
(``scheduler_app.preview``, the describer ``schedule_preview`` uses) and the field errors.
A user without view or add/change permission on schedules gets 403; a schedule of another
tenant is answered with 404.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.utils import timezone

from scheduler_app.admin.forms import BUILDER_FIELDS, TIMING_FIELDS
from scheduler_app.models import Schedule
from scheduler_app.preview import preview_rows
from scheduler_app.tenancy import scope
from scheduler_app.timing import describe

COUNT = 10


def preview(model_admin: Any, request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return JsonResponse({"error": "POST the schedule form"}, status=405)
    instance = _instance(request)
    allowed = (
        model_admin.has_change_permission(request, instance)
        or model_admin.has_view_permission(request, instance)
        if instance is not None
        else model_admin.has_add_permission(request)
    )
    if not allowed:
        return JsonResponse({"error": "you may not preview this schedule"}, status=403)
    data = _with_defaults(request.POST, instance or Schedule())
    data["expected_version"] = str(instance.version if instance else 0)
    form_class = model_admin.get_form(request, instance, change=instance is not None)
    form = form_class(data, instance=instance or Schedule())
    form.preview_only = True
    form.is_valid()
    errors = {
        name: [str(e) for e in found]
        for name, found in form.errors.items()
        if name in (*TIMING_FIELDS, *BUILDER_FIELDS)
    }
    timing = form.timing
    if timing is None:
        return JsonResponse({"ok": False, "errors": errors})
    rows = preview_rows(timing, timezone.now(), COUNT)
    return JsonResponse(
        {
            "ok": True,
            "errors": errors,
            "kind": form.cleaned_data.get("kind"),
            "rule": form.cleaned_data.get("rule"),
            "description": describe(timing),
            "timezone": timing.zone.key,
            "slots": [row.as_display() | {"utc_iso": row.as_json()["utc"]} for row in rows],
        }
    )


def _with_defaults(posted: QueryDict, instance: Schedule) -> QueryDict:
    """The posted form over the schedule's stored (or default) values: a page or a script
    may send only the fields it changed."""
    data = QueryDict(mutable=True)
    for name in TIMING_FIELDS:
        value = getattr(instance, name)
        if value is None or name in posted or f"{name}_0" in posted:
            continue
        if isinstance(value, datetime):  # the admin's split date / time widget
            data[f"{name}_0"], data[f"{name}_1"] = f"{value:%Y-%m-%d}", f"{value:%H:%M:%S}"
        else:
            data[name] = str(value)
    for key in posted:
        data.setlist(key, posted.getlist(key))
    return data


def _instance(request: HttpRequest) -> Schedule | None:
    object_id = request.POST.get("_object_id") or ""
    if not object_id:
        return None
    queryset = scope(Schedule.objects.all(), request.user)
    try:
        found = queryset.filter(pk=object_id).first()
    except (ValueError, ValidationError):
        found = None
    if found is None:
        raise Http404("no such schedule")
    return found
