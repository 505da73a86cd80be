"""What the schedule list adds to each row in its own query (``annotate``), so it needs no
query per row: whether a kill switch covers the schedule, and its latest outcome; and the
kill switch's one query on a schedule's own page, which is not annotated."""

from __future__ import annotations

from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from scheduler_app.models import KillSwitch, KillSwitchScope, Schedule
from scheduler_app.models.latest import RECENT, latest


def switches_covering(tenant: Any, task: Any) -> QuerySet[KillSwitch]:
    """The switches that are on and cover a schedule of ``tenant`` running ``task``."""
    return KillSwitch.objects.filter(enabled=True).filter(
        Q(scope=KillSwitchScope.GLOBAL)
        | Q(scope=KillSwitchScope.TENANT, target=tenant)
        | Q(scope=KillSwitchScope.TASK, target=task)
    )


def kill_switched_annotation() -> Exists:
    """Whether a switch covers the row: one ``EXISTS`` on the few switch rows, so the list
    needs no query per row."""
    return Exists(switches_covering(OuterRef("tenant"), OuterRef("task")))


def kill_switched(schedule: Schedule) -> bool:
    """The list's annotation, or one query on a schedule's own page (not annotated)."""
    annotated = getattr(schedule, "kill_switched", None)
    if annotated is not None:
        return bool(annotated)
    return switches_covering(schedule.tenant, schedule.task).exists()


LAST_OUTCOME = ("scheduled_for", "state", "started_at")


def last_outcome_annotation() -> Any:
    """The latest occurrence's slot, state and start (``last``, one JSON object): one search
    of the ledger per row, in the last five weeks' partitions first (``models.latest``); the
    list needs no query per row, nor a scan of every partition."""
    return latest(LAST_OUTCOME, recent=timezone.now() - RECENT)
