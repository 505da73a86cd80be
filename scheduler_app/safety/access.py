"""Who may do what: the one check every service makes before it writes.

Each action names the model permission it needs; a person must hold it and belong to the
schedule's tenant, and a schedule declared in code (``@scheduled``) is changed only by the
code (``sync_schedules``): people may pause, resume, run and backfill it, nothing else.
The admin's button tables only hide what this refuses.
"""

from __future__ import annotations

from typing import Any

from scheduler_app.errors import OperatorPermissionDenied
from scheduler_app.models import Schedule, ScheduleOrigin
from scheduler_app.safety import tenancy
from scheduler_app.safety.actors import is_system

ADD = "scheduler_app.add_schedule"
CHANGE = "scheduler_app.change_schedule"
DELETE = "scheduler_app.delete_schedule"
PAUSE = "scheduler_app.pause_schedule"
RUN = "scheduler_app.run_schedule"
APPROVE = "scheduler_app.approve_schedule"
REPLAY = "scheduler_app.replay_occurrence"
CODE_ACTIONS = (PAUSE, RUN)
"""What a person may do to a code-declared schedule."""


def authorize(user: Any, permission: str, schedule: Schedule | None = None) -> None:
    """Raise unless ``user`` may take an action needing ``permission`` (on ``schedule``).

    ``TenantForbidden`` for another tenant's schedule (checked first: its existence is not
    confirmed), ``OperatorPermissionDenied`` for a missing permission or a code schedule.
    """
    if is_system(user):
        return
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        raise OperatorPermissionDenied("sign in with an active account to change schedules")
    if schedule is not None:
        tenancy.check_access(user, schedule)
    if not user.has_perm(permission):
        raise OperatorPermissionDenied(
            f"{user.get_username()} lacks the permission {permission!r}; ask an administrator "
            "to grant it"
        )
    if (
        schedule is not None
        and schedule.origin == ScheduleOrigin.CODE
        and permission not in CODE_ACTIONS
    ):
        raise OperatorPermissionDenied(
            f"schedule {schedule.pk} is declared in code (@scheduled): change it in the code "
            "and deploy; sync_schedules applies it"
        )


def check_tenant(user: Any, tenant: object) -> None:
    """A person may only create (or move a schedule into) one of their tenants."""
    if not is_system(user) and not tenancy.may_access(user, str(tenant or "")):
        raise tenancy.TenantForbidden(
            f"you are not a member of tenant {tenant!r}; pick one of your tenants or ask an "
            "administrator to add you to its tenant group"
        )
