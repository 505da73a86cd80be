"""The live preview: a JSON view behind the admin's permissions.

The page's script POSTs the form as it is (nothing saved); the view runs the same builder and
validation as the form and answers with the English description, the next slots in local time
and UTC with DST sentences (``scheduler_app.preview``, the describer ``schedule_preview`` uses)
and the field errors. A user without view or add/change permission on schedules gets 403; a
schedule of another tenant is answered with 404.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone

from scheduler_app.admin.forms import BUILDER_FIELDS, ScheduleForm, error_message, error_target
from scheduler_app.definitions import _check_min_interval as check_min_interval
from scheduler_app.definitions import timing_for
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import Schedule
from scheduler_app.preview import preview_rows
from scheduler_app.tenancy import scope
from scheduler_app.timing import describe

COUNT = 10
TIMING_FIELDS = (
    "kind",
    "rule",
    "timezone",
    "anchor",
    "dst_nonexistent",
    "dst_ambiguous",
    "starts_at",
    "ends_at",
    "max_count",
    "active_window",
    "window_policy",
)


class PreviewForm(ScheduleForm):
    """The schedule form, validating only what the timing depends on."""

    blocking_fields = (*TIMING_FIELDS, *BUILDER_FIELDS)

    def _validate(self, cleaned: dict[str, Any], *, built: bool) -> None:
        self.timing = None
        values = {name: cleaned.get(name) for name in TIMING_FIELDS}
        try:
            self.timing = _timing_only(values)
        except ScheduleValidationError as exc:
            target = error_target(exc.field, self.fields, built=built)
            self.add_error(target, error_message(exc.field, exc.message))

    def clean_task(self) -> str:
        return (self.cleaned_data.get("task") or "").strip()  # checked on save, not per key


def _timing_only(values: dict[str, Any]) -> Any:
    """The timing the beat would evaluate: ``timing_for`` on the unsaved definition."""
    fields = {name: value for name, value in values.items() if value not in (None, "")}
    timing = timing_for(Schedule(**fields))
    check_min_interval(timing)
    return timing


def preview(model_admin: Any, request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return JsonResponse({"error": "POST the schedule form"}, status=405)
    instance = _instance(model_admin, request)
    allowed = (
        model_admin.has_change_permission(request, instance)
        or model_admin.has_view_permission(request, instance)
        if instance is not None
        else model_admin.has_add_permission(request)
    )
    if not allowed:
        return JsonResponse({"error": "you may not preview this schedule"}, status=403)
    data = request.POST.copy()
    data["expected_version"] = str(instance.version if instance else 0)
    form = PreviewForm(data, instance=instance or Schedule(), request=request)
    form.is_valid()
    timing = getattr(form, "timing", None)
    errors = {
        field: [str(e) for e in errs]
        for field, errs in form.errors.items()
        if field in (*TIMING_FIELDS, *BUILDER_FIELDS)
    }
    if timing is None:
        return JsonResponse({"ok": False, "errors": errors})
    cleaned = form.cleaned_data
    now = timezone.now()
    rows = preview_rows(timing, now, COUNT)
    return JsonResponse(
        {
            "ok": True,
            "errors": errors,
            "kind": cleaned.get("kind"),
            "rule": cleaned.get("rule"),
            "description": describe(timing),
            "timezone": timing.zone.key,
            "slots": [row.as_display() | {"utc_iso": row.as_json()["utc"]} for row in rows],
        }
    )


def _instance(model_admin: Any, request: HttpRequest) -> Schedule | None:
    object_id = request.POST.get("_object_id") or ""
    if not object_id:
        return None
    queryset = scope(Schedule.objects.all(), request.user)
    try:
        found = queryset.filter(pk=object_id).first()
    except (ValueError, ScheduleValidationError):
        found = None
    if found is None:
        raise Http404("no such schedule")
    return found
