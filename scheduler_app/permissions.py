"""Execution-time permission checks: is the schedule's owner still allowed to run it *now*?"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from django.utils.module_loading import import_string

from scheduler_app.conf import get_settings

if TYPE_CHECKING:
    from scheduler_app.models import Schedule

RUN_PERMISSION = "scheduler_app.run_schedule"


def owner_may_run(schedule: Schedule) -> bool:
    """Default check: no owner (a system schedule), or an active owner with the run permission."""
    owner = schedule.owner
    if owner is None:
        return True
    return bool(owner.is_active and owner.has_perm(RUN_PERMISSION))


def may_run(schedule: Schedule) -> bool:
    """Apply ``SCHEDULER_PERMISSION_CHECK`` (a dotted path to ``check(schedule) -> bool``)."""
    check: Callable[[Schedule], bool] = import_string(get_settings().PERMISSION_CHECK)
    return bool(check(schedule))
