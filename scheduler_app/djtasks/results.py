"""django-tasks-db's result rows, read through the app registry (when the app is installed).

The occurrence page links the row of its latest handoff (``Occurrence.handoff_id``), as it
links django-celery-results' row for a Celery occurrence. ``supersede`` is the adapter's
stand-in for Celery's revoke: a handoff replaced by a new one (the reconciler put a lost or
never-started run back in the outbox) is closed ``FAILED`` if it is still waiting or was left
``RUNNING`` by a killed worker, so that the backend's table tells no stale story.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

from django.apps import apps
from django.db import DatabaseError, transaction

logger = logging.getLogger("scheduler_app.djtasks")

APP_LABEL = "django_tasks_database"
SUPERSEDED = "scheduler_app.djtasks.errors.HandoffSuperseded"
"""The ``exception_class_path`` written on a superseded result row."""
OPEN = ("READY", "RUNNING")
RESULT_ADMIN = "admin:django_tasks_database_dbtaskresult_change"


def result_model() -> Any:
    """django-tasks-db's ``DBTaskResult``, or None when the app is not installed."""
    if not apps.is_installed("django_tasks_db"):
        return None
    return apps.get_model(APP_LABEL, "DBTaskResult")


def result_id(handoff_id: str) -> uuid.UUID | None:
    """``handoff_id`` as django-tasks-db's result id (a UUID), or None: empty, or a value
    written past the adapter that no result row can have."""
    try:
        return uuid.UUID(str(handoff_id))
    except ValueError:
        return None


def result_row(handoff_id: str) -> Any:
    """The result row of one handoff, or None (no such row, not a UUID, app absent or not
    migrated)."""
    model = result_model()
    key = result_id(handoff_id)
    if model is None or key is None:
        return None
    try:
        with transaction.atomic():  # a savepoint: a failed read must not spoil the page's
            return model.objects.filter(id=key).first()
    except (DatabaseError, ValueError):
        return None


def supersede(handoff_id: str, by: str, now: datetime) -> int:
    """Close the open result row of an earlier handoff of the same occurrence (see above)."""
    model = result_model()
    key = result_id(handoff_id)
    if model is None or key is None:  # none, or no result id (written past the adapter)
        return 0
    closed = int(
        model.objects.filter(id=key, status__in=OPEN).update(
            status="FAILED",
            finished_at=now,
            exception_class_path=SUPERSEDED,
            traceback=f"superseded by handoff {by}: the scheduler handed the occurrence off "
            "again (its worker was lost, or the job never started)",
        )
    )
    if closed:
        logger.info(
            "earlier handoff %s closed (superseded by %s)",
            handoff_id,
            by,
            extra={"action": "djtasks.superseded", "handoff_id": handoff_id},
        )
    return closed
