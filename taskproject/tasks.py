"""Example django.tasks tasks with schedules declared in code (found by autodiscovery of the
installed apps' ``tasks`` modules).

``EFFECTS`` (a file path, optional) receives one line per run: the acceptance test counts
effects per occurrence with it.
"""

import os

try:
    from django.tasks import task  # Django 6: Django's own django.tasks
except ImportError:
    from django_tasks import task  # Django 5.2: the django-tasks backport

from scheduler_app.authoring.declarations import scheduled
from scheduler_app.context import current_occurrence


@scheduled(every="10s", objective="heartbeat")
@task()
def heartbeat() -> dict[str, str]:
    """Runs every 10 seconds; writes one line per run when ``SCHEDULER_EFFECTS`` is set."""
    occurrence = current_occurrence()
    key = occurrence.idempotency_key if occurrence else "unscheduled"
    effects = os.environ.get("SCHEDULER_EFFECTS")
    if effects:
        with open(effects, "a") as out:
            out.write(f"{key} {occurrence.attempt if occurrence else 0}\n")
    return {"idempotency_key": key}
