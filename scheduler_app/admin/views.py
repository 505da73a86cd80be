"""The live preview: a JSON view behind the admin's permissions.

The page's script POSTs the form as it is (nothing saved); the view runs the admin's own form
(the same builder and the beat's ``timing_for``) in its preview mode and answers with the
English description, the next slots in local time and UTC with DST sentences
(``scheduler_app.authoring.preview``, the describer ``schedule_preview`` uses) and the field errors.
``_preview_from`` (a local date or date and time) starts the slots there instead of now.

The form is the admin's with every field, whatever the user may change: nothing is saved. A
user who may only view a schedule previews its stored definition (posted timing values are
ignored: a view-only account cannot make the server evaluate rules of its choosing), and so
does a code-declared schedule (code owns it). A user who may not see the schedule, or may not
add one when previewing a new one, gets 403 with a message; a schedule of another tenant is
answered with 404; any other input is a field error, never 500. Every slot is searched for
under the settings' search budget (``SCHEDULER_SEARCH_CANDIDATES``, ``..._SPAN_DAYS``): a rule
whose slots the budget does not reach shows the slots found and the reason on ``rule``.
"""

from __future__ import annotations

from datetime import datetime
from functools import partial
from typing import Any

from django.core.exceptions import ValidationError
from django.forms import modelform_factory
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.utils import timezone

from scheduler_app.admin.forms import BUILDER_FIELDS, TIMING_FIELDS
from scheduler_app.admin.words import builder_fill
from scheduler_app.authoring.preview import (
    PreviewRow,
    calendar_notes,
    description,
    parse_from,
    preview_slots,
)
from scheduler_app.models import Schedule, ScheduleOrigin
from scheduler_app.safety.tenancy import scope
from scheduler_app.timing import TICK, Timing

COUNT = 10


def preview(model_admin: Any, request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return JsonResponse({"error": "POST the schedule form"}, status=405)
    try:
        instance = _instance(request)
    except Http404:  # another tenant's, or none: the same answer, in JSON for the script
        return JsonResponse({"error": "no such schedule; reload the page"}, status=404)
    refusal = _refusal(model_admin, request, instance)
    if refusal:
        return JsonResponse({"error": refusal}, status=403)
    posted = request.POST if _may_post_rules(model_admin, request, instance) else QueryDict()
    data = _with_defaults(posted, instance or Schedule())
    data["expected_version"] = str(instance.version if instance else 0)
    form_class = _form_class(model_admin, request)
    form = form_class(data, instance=instance or Schedule(), request=request)
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
    try:
        start = _start(request.POST.get("_preview_from") or "", timing)
        found = preview_slots(timing, start - TICK, COUNT)
    except ValueError as error:
        return JsonResponse({"ok": False, "errors": {**errors, "preview_from": [str(error)]}})
    except OverflowError:  # a slot past year 9999 in the zone
        errors["preview_from"] = [
            "the slots after this date are past year 9999; pick an earlier one"
        ]
        return JsonResponse({"ok": False, "errors": errors})
    rows = found.rows
    if found.stopped:
        errors.setdefault("rule", []).append(found.stopped)
    return JsonResponse(
        {
            "ok": True,
            "errors": errors,
            "kind": form.cleaned_data.get("kind"),
            "rule": form.cleaned_data.get("rule"),
            "description": description(timing),
            "timezone": timing.zone.key,
            "from": _shown(start, timing),
            "slots": [row.as_display() | {"utc_iso": row.as_json()["utc"]} for row in rows],
            **({"fill": builder_fill(form.parsed)} if form.parsed is not None else {}),
            "skipped": calendar_notes(timing, start - TICK, rows),
        }
    )


def _may_post_rules(model_admin: Any, request: HttpRequest, instance: Schedule | None) -> bool:
    """Whether the posted values are previewed: for a new schedule (``_refusal`` has checked
    the add permission), or a schedule of the API this user may change; else the stored one."""
    if instance is None:
        return True
    if instance.origin == ScheduleOrigin.CODE:
        return False
    return bool(model_admin.has_change_permission(request, instance))


def _refusal(model_admin: Any, request: HttpRequest, instance: Schedule | None) -> str:
    """Why the user may not preview this, or "" when they may."""
    if instance is not None:
        if model_admin.has_view_or_change_permission(request, instance):
            return ""
        return "you need the view_schedule permission to preview this schedule"
    if model_admin.has_add_permission(request):
        return ""
    return "you need the add_schedule permission to preview a new schedule"


def _form_class(model_admin: Any, request: HttpRequest) -> Any:
    """The admin's form class with all its fields and the admin's widgets (split date and
    time): ``get_form`` leaves out the read-only fields (all of them for a view-only user or a
    code-declared schedule), and the preview fills the timing fields with the stored values."""
    base = model_admin.form
    return modelform_factory(
        Schedule,
        form=base,
        fields=base.Meta.fields,
        formfield_callback=partial(model_admin.formfield_for_dbfield, request=request),
    )


def _shown(instant: datetime, timing: Timing) -> dict[str, str | None]:
    shown = PreviewRow(local=instant.astimezone(timing.zone), note=None).as_display()
    return {"local": shown["local"], "utc": shown["utc"]}


def _start(text: str, timing: Timing) -> datetime:
    """Where the slots start: the posted local date and time, or now."""
    if not text.strip():
        return timezone.now()
    return parse_from(text, timing.zone, "preview from")


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
