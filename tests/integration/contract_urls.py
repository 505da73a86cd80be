"""A URLconf with the contract's JSON views, as a project wires them (docs/contract.md)."""

from django.contrib import admin
from django.urls import path

from scheduler_app.contract.views import occurrence_json, schedule_json

urlpatterns = [
    path("admin/", admin.site.urls),
    path("scheduler/occurrences/<uuid:occurrence_id>.json", occurrence_json),
    path("scheduler/schedules/<uuid:schedule_id>.json", schedule_json),
]
