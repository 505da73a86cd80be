"""The scheduler's URLs. Include them in the project's URLconf:
``path("scheduler/", include("scheduler_app.urls"))``.

- ``metrics``: Prometheus (staff users or ``SCHEDULER_METRICS_TOKEN``)
- ``health``: 200 while a beat ticks, 503 when none did within ``SCHEDULER_HEALTH_STALE``
- ``occurrences/<id>.json``, ``schedules/<id>.json``: occurrence.v1 and schedule.v1 (staff,
  tenant-scoped)
"""

from django.urls import path

from scheduler_app.contract.views import occurrence_json, schedule_json
from scheduler_app.monitoring import views

app_name = "scheduler"
urlpatterns = [
    path("metrics", views.metrics, name="metrics"),
    path("health", views.health, name="health"),
    path("occurrences/<uuid:occurrence_id>.json", occurrence_json, name="occurrence-json"),
    path("schedules/<uuid:schedule_id>.json", schedule_json, name="schedule-json"),
]
