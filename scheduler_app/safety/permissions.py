"""Execution-time permission checks: is the schedule's owner still allowed to run it *now*?

Also the owner rules every schedule write applies (who may pick which owner; REQUIRE_OWNER).

And the owner's lifecycle: deleting or deactivating a user pauses the schedules they own
(with a note saying why), so a schedule never silently becomes an owner-less, unchecked one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.utils.module_loading import import_string

from scheduler_app.conf import get_settings
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import Schedule, ScheduleStatus
from scheduler_app.safety.actors import is_system
from scheduler_app.safety.tenancy import may_access

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

logger = logging.getLogger("scheduler_app.permissions")
RUN_PERMISSION = "scheduler_app.run_schedule"
ASSIGN_OWNER_PERMISSION = "scheduler_app.assign_owner"
CODE_ORIGIN = "code"
"""Schedules declared with ``@scheduled`` are system schedules: defined by the deployed code,
they need no owner even with ``SCHEDULER_REQUIRE_OWNER``."""
OWNER_PAUSED_BY = "scheduler"
"""``paused_by`` of a schedule paused because its owner was deleted or deactivated."""


def owner_refusal(schedule: Schedule) -> str:
    """Why the default check refuses to run ``schedule`` now, or "" when it may run."""
    owner = schedule.owner
    if owner is None:
        if get_settings().REQUIRE_OWNER and schedule.origin != CODE_ORIGIN:
            return (
                "the schedule has no owner and SCHEDULER_REQUIRE_OWNER is set; "
                "give it an owner with the run_schedule permission"
            )
        return ""
    if not owner.is_active:
        return f"the owner {owner.get_username()!r} is deactivated"
    if not owner.has_perm(RUN_PERMISSION):
        return f"the owner {owner.get_username()!r} lacks the {RUN_PERMISSION} permission"
    return ""


def owner_may_run(schedule: Schedule) -> bool:
    """Default check: an active owner with the run permission; no owner (a system schedule)
    only while ``SCHEDULER_REQUIRE_OWNER`` is off."""
    return not owner_refusal(schedule)


def may_run(schedule: Schedule) -> bool:
    """Apply ``SCHEDULER_PERMISSION_CHECK`` (a dotted path to ``check(schedule) -> bool``)."""
    check: Callable[[Schedule], bool] = import_string(get_settings().PERMISSION_CHECK)
    return bool(check(schedule))


def refusal(schedule: Schedule) -> str:
    """The message stored on an occurrence the permission check refused."""
    return owner_refusal(schedule) or "refused by SCHEDULER_PERMISSION_CHECK"


def owner_required(owner: Any, origin: str) -> bool:
    """True when a schedule of ``origin`` without an owner must be refused."""
    return owner is None and origin != CODE_ORIGIN and get_settings().REQUIRE_OWNER


def may_assign_owner(user: Any) -> bool:
    """Superusers and users with ``scheduler_app.assign_owner`` may pick another owner."""
    return bool(getattr(user, "is_superuser", False) or user.has_perm(ASSIGN_OWNER_PERMISSION))


def owner_choices(user: Any, tenant: str) -> QuerySet[AbstractBaseUser]:
    """The users ``user`` may make the owner of a schedule of ``tenant``.

    Without ``assign_owner``: only themselves. With it: active staff users who belong to
    ``tenant`` (the tenant resolver says so); superusers only when ``user`` is one (a
    schedule must never run with more rights than the person who set it up). A system actor
    may pick any active user.
    """
    users = get_user_model().objects.filter(is_active=True)
    if is_system(user):
        return users.order_by("pk")
    if not may_assign_owner(user):
        return users.filter(pk=user.pk)
    candidates = users.filter(is_staff=True)
    if not user.is_superuser:
        candidates = candidates.filter(is_superuser=False)
    allowed = [person.pk for person in candidates if may_access(person, tenant)]
    return users.filter(pk__in=[*allowed, user.pk]).order_by("pk")


def pause_owned_schedules(user: Any, why: str, now: datetime) -> int:
    """Pause the active schedules ``user`` owns, noting ``why``; returns how many."""
    paused = Schedule.objects.filter(owner=user, status=ScheduleStatus.ACTIVE).update(
        status=ScheduleStatus.PAUSED,
        paused_at=now,
        paused_by=OWNER_PAUSED_BY,
        pause_note=why,
        updated_at=now,
    )
    if paused:
        logger.warning(
            "schedules paused: %s",
            why,
            extra={"action": "schedule.owner_paused", "count": paused, "user_id": user.pk},
        )
    return paused


def check_owner_present(owner: Any, origin: str) -> None:
    if owner_required(owner, origin):
        raise ScheduleValidationError(
            "owner",
            "an owner is required (SCHEDULER_REQUIRE_OWNER): every run is checked against "
            "its owner's permissions; choose a user with the run_schedule permission",
            code="owner_required",
        )


def with_owner_rules(
    fields: dict[str, Any], user: Any, *, current: Schedule | None
) -> dict[str, Any]:
    """Apply the owner rules for an edit by ``user`` (a system actor: no rules).

    New schedules are owned by their creator unless an owner is given. Another owner must be
    one of ``owner_choices(user, tenant)``, and so must the owner a schedule keeps when it is
    moved to another tenant. Only a superuser may leave a person's schedule
    without an owner: an owner-less schedule runs unchecked, as the system.
    """
    if is_system(user):
        return fields
    result = dict(fields)
    if current is None and result.get("owner") in (None, ""):
        result["owner"] = user
        return result
    moved = current is not None and "tenant" in result and result["tenant"] != current.tenant
    if "owner" not in result and not moved:
        return result
    if "owner" in result:
        wanted = getattr(result["owner"], "pk", result["owner"]) or None
    else:  # moved to another tenant: the owner it keeps must belong there too
        wanted = current.owner_id if current is not None else None
    if current is not None and wanted == current.owner_id and not moved:
        return result
    if wanted is None:
        if not getattr(user, "is_superuser", False):
            raise ScheduleValidationError(
                "owner",
                "a schedule needs an owner: its runs are checked against the owner's "
                "permissions; keep the owner or pick yourself",
                code="owner_required",
            )
        return result
    tenant = str(result.get("tenant", current.tenant if current is not None else "") or "")
    taking = current is not None and wanted == user.pk and not moved  # another's, as yours
    offered = owner_choices(user, tenant).filter(pk=wanted).exists()
    if taking and not may_assign_owner(user):
        raise ScheduleValidationError(
            "owner",
            "this schedule keeps its owner: taking it as yours needs the "
            "scheduler_app.assign_owner permission; ask its owner or an administrator",
            code="owner_not_allowed",
        )
    if wanted != user.pk and not offered:
        raise ScheduleValidationError(
            "owner",
            "you may not choose this user as the owner: it takes the "
            "scheduler_app.assign_owner permission, and the owner must be an active staff "
            f"user of tenant {tenant!r} (a superuser only for a superuser); pick yourself",
            code="owner_not_allowed",
        )
    return result
