"""JSON views of the contracts for the admin: one occurrence as ``occurrence.v1``, one schedule
as ``schedule.v1`` (``?style=spec`` for the specification's form).

Staff only, with the model's view permission; a row of a tenant the user may not see answers
404, as if it did not exist (``scheduler_app.safety.tenancy``). Wire them in a URLconf, e.g.::

    path("scheduler/occurrences/<uuid:occurrence_id>.json", occurrence_json),
    path("scheduler/schedules/<uuid:schedule_id>.json", schedule_json),
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.views.decorators.http import require_GET

from scheduler_app.contract.export import export_document
from scheduler_app.contract.fields import STYLES
from scheduler_app.contract.occurrence import occurrence_contract
from scheduler_app.models import Occurrence, Schedule
from scheduler_app.safety.tenancy import may_access


def _check(request: HttpRequest, permission: str, tenant: str) -> None:
    user: Any = request.user
    if not user.has_perm(f"scheduler_app.{permission}") or not may_access(user, tenant):
        raise Http404("no such record")


@staff_member_required
@require_GET
def occurrence_json(request: HttpRequest, occurrence_id: UUID) -> JsonResponse:
    """``GET``: the occurrence as an ``occurrence.v1`` record."""
    occurrence = (
        Occurrence.objects.select_related("schedule", "schedule_version")
        .filter(pk=occurrence_id)
        .first()
    )
    if occurrence is None:
        raise Http404("no such occurrence")
    _check(request, "view_occurrence", occurrence.schedule.tenant)
    return JsonResponse(occurrence_contract(occurrence), json_dumps_params={"indent": 2})


@staff_member_required
@require_GET
def schedule_json(request: HttpRequest, schedule_id: UUID) -> HttpResponse:
    """``GET``: the schedule as a ``schedule.v1`` document (``?style=native|spec``)."""
    style = request.GET.get("style", "native")
    if style not in STYLES:
        return HttpResponseBadRequest(f"style must be one of {', '.join(STYLES)}")
    schedule = Schedule.objects.select_related("owner").filter(pk=schedule_id).first()
    if schedule is None:
        raise Http404("no such schedule")
    _check(request, "view_schedule", schedule.tenant)
    document = export_document(schedule, style)  # type: ignore[arg-type]
    return JsonResponse(document, json_dumps_params={"indent": 2, "ensure_ascii": False})
