"""The scheduler's URLs. Include them in the project's URLconf:
``path("scheduler/", include("scheduler_app.urls"))``.

- ``metrics``: Prometheus (staff users or ``SCHEDULER_METRICS_TOKEN``)
- ``health``: 200 while a beat ticks, 503 when none did within ``SCHEDULER_HEALTH_STALE``
"""

from django.urls import path

from scheduler_app.monitoring import views

app_name = "scheduler"
urlpatterns = [
    path("metrics", views.metrics, name="metrics"),
    path("health", views.health, name="health"),
]
