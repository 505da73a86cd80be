"""The example project's Celery app made the usual way, without ``task_cls``: the
misconfiguration a beat and a worker must refuse to start with (test_startup_checks)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

app = Celery("plain")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.task(name="adoption.plain_report", schedulable=True)
def plain_report() -> None: ...
