"""Write and read the schedules' audit trail (``ScheduleAuditEvent``).

The service layer calls ``record`` inside each action's transaction, so an action that is
refused or rolled back leaves no entry, and every entry point (admin, commands, the Python
API, import, sync) is recorded alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet

from scheduler_app.models import KillSwitchEvent, KillSwitchScope, Schedule, ScheduleAuditEvent
from scheduler_app.safety.actors import actor_name


def record(
    schedule: Schedule,
    action: str,
    user: Any,
    now: datetime,
    *,
    reason: str = "",
    **details: Any,
) -> ScheduleAuditEvent:
    """One entry: ``user`` did ``action`` to ``schedule`` (at its current version) at ``now``."""
    return ScheduleAuditEvent.objects.create(
        schedule_id=schedule.pk,
        action=action,
        by=actor_name(user),
        at=now,
        reason=reason[:2000],
        version=schedule.version,
        details={key: _plain(value) for key, value in details.items()},
    )


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value if isinstance(value, str | int | float | bool | type(None)) else str(value)


def trail(schedule_ids: Iterable[object]) -> QuerySet[ScheduleAuditEvent]:
    """The entries of these schedules, newest first."""
    return ScheduleAuditEvent.objects.filter(schedule_id__in=list(schedule_ids))


def switch_events_covering(schedule: Schedule) -> QuerySet[KillSwitchEvent]:
    """Kill-switch changes whose scope covers ``schedule`` (global, its tenant, its task)."""
    return KillSwitchEvent.objects.filter(
        Q(scope=KillSwitchScope.GLOBAL)
        | Q(scope=KillSwitchScope.TENANT, target=schedule.tenant)
        | Q(scope=KillSwitchScope.TASK, target=schedule.task)
    ).order_by("-at")
