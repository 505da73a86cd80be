"""Checks every schedule write passes through (``services.create_schedule``/``update_schedule``).

In order: the payload is plain JSON without secrets, a version of a task that needs approval
waits for it (see ``safety.approval``), and the tenant's active-schedule quota holds.
``max_per_day`` is kept at handoff (``safety.quotas``): a rule may be frequent and still be
meant to stop after N runs a day.
"""

from __future__ import annotations

from datetime import datetime

from scheduler_app.models import Schedule
from scheduler_app.safety.approval import hold_for_approval
from scheduler_app.safety.payloads import check_payload
from scheduler_app.safety.quotas import check_active_quota


def before_write(schedule: Schedule, *, creating: bool, now: datetime) -> None:
    """Called inside the write's transaction, before the row is saved.

    May change the row (hold a version that needs approval) or raise
    ``ScheduleValidationError`` (a secret in the payload, a quota) to refuse the write.
    """
    check_payload(schedule.kwargs)
    check_payload(schedule.args, "args")
    hold_for_approval(schedule)
    check_active_quota(schedule)
