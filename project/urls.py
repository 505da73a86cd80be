from django.contrib import admin
from django.urls import include, path

from scheduler_app.contract.views import occurrence_json, schedule_json
from scheduler_app.monitoring import views as monitoring

urlpatterns = [
    path("admin/", admin.site.urls),
    # The scheduler's own URLs: /scheduler/metrics (Prometheus), /scheduler/health.
    path("scheduler/", include("scheduler_app.urls")),
    # The contracts as JSON for staff: occurrence.v1 and schedule.v1.
    path("scheduler/occurrences/<uuid:occurrence_id>.json", occurrence_json),
    path("scheduler/schedules/<uuid:schedule_id>.json", schedule_json),
    # Where scrapers look by default: the same protected view as /scheduler/metrics.
    path("metrics", monitoring.metrics, name="metrics"),
]
