"""Kill switches: stop handing occurrences to Celery, for everything, one tenant or one task.

While a switch is on, every occurrence in its scope that reaches the outbox ends
``skipped: kill_switch`` instead of being published (not held: when the switch goes off, the
schedules carry on from their next slot instead of releasing a flood of stale work; replay a
skipped occurrence to run it after all). Occurrences already handed to the broker before the
switch went on are not recalled. Every change is audited (``KillSwitchEvent``: who, when, why).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from django.db import transaction
from django.db.models import Model, Q, QuerySet

from scheduler_app.errors import OperatorPermissionDenied, ScheduleValidationError
from scheduler_app.models import KillSwitch, KillSwitchEvent, KillSwitchScope, Occurrence
from scheduler_app.safety.actors import actor_name, is_system
from scheduler_app.safety.tenancy import TenantForbidden, allowed_tenants

logger = logging.getLogger("scheduler_app.safety")
REASON = "kill_switch"
CHANGE_PERMISSION = "scheduler_app.change_killswitch"
M = TypeVar("M", bound=Model)


def set_kill_switch(
    scope: str,
    target: str = "",
    *,
    enabled: bool,
    reason: str,
    now: datetime,
    by: str = "",
    user: Any = None,
) -> KillSwitch:
    """Turn a switch on or off and record who did it and why (both required).

    ``user``: the person turning it (``None`` or a system actor: the deployment, and ``by``
    says who). A person needs ``change_killswitch``; a tenant's switch takes a member of that
    tenant, a global or task switch (which stops every tenant's work) a user of all tenants.
    """
    scope, target = _validated(scope, target)
    authorize_switch(user, scope, target)
    by = by or ("" if is_system(user) else actor_name(user))
    if not by.strip():
        raise ScheduleValidationError(
            "by", "say who turns the switch (a user name)", code="required"
        )
    if not reason.strip():
        raise ScheduleValidationError(
            "reason", "say why the switch is turned (it is kept in the audit)", code="required"
        )
    with transaction.atomic():
        switch, _ = KillSwitch.objects.select_for_update().get_or_create(
            scope=scope, target=target, defaults={"changed_at": now, "enabled": enabled}
        )
        switch.enabled, switch.reason, switch.changed_by, switch.changed_at = (
            enabled,
            reason,
            by,
            now,
        )
        switch.save()
        KillSwitchEvent.objects.create(
            scope=scope, target=target, enabled=enabled, by=by, at=now, reason=reason
        )
    logger.warning(
        "kill switch %s turned %s by %s: %s",
        describe(scope, target),
        "on" if enabled else "off",
        by,
        reason,
        extra={"action": f"killswitch.{'on' if enabled else 'off'}", "scope": scope},
    )
    return switch


def authorize_switch(user: Any, scope: str, target: str) -> None:
    """Raise unless ``user`` may turn the switch ``scope``/``target``."""
    if is_system(user):
        return
    if not getattr(user, "is_authenticated", False) or not user.has_perm(CHANGE_PERMISSION):
        raise OperatorPermissionDenied(
            f"turning kill switches takes the {CHANGE_PERMISSION!r} permission; ask an "
            "administrator"
        )
    tenants = allowed_tenants(user)
    if tenants is None:
        return
    if scope != KillSwitchScope.TENANT:
        raise TenantForbidden(
            f"a {scope} switch stops every tenant's work: only a user of all tenants (a "
            "superuser) may turn it; use a switch of your own tenant"
        )
    if target not in tenants:
        raise TenantForbidden(
            f"you are not a member of tenant {target!r}; you may turn the switches of: "
            + (", ".join(repr(t) for t in sorted(tenants)) or "(none)")
        )


def visible_to(queryset: QuerySet[M], user: Any) -> QuerySet[M]:
    """``KillSwitch`` or ``KillSwitchEvent`` rows ``user`` may see: all for a user of all
    tenants, else only the switches of their own tenants."""
    tenants = allowed_tenants(user)
    if tenants is None:
        return queryset
    return queryset.filter(Q(scope=KillSwitchScope.TENANT, target__in=sorted(tenants)))


def _validated(scope: str, target: str) -> tuple[str, str]:
    if scope not in KillSwitchScope.values:
        raise ScheduleValidationError(
            "scope", f"unknown scope {scope!r}; use one of {', '.join(KillSwitchScope.values)}"
        )
    target = target.strip()
    if scope == KillSwitchScope.GLOBAL and target:
        raise ScheduleValidationError("target", "a global switch has no target; leave it empty")
    if scope != KillSwitchScope.GLOBAL and not target:
        raise ScheduleValidationError("target", f"name the {scope} this switch stops")
    return scope, target


def describe(scope: str, target: str) -> str:
    return "global" if scope == KillSwitchScope.GLOBAL else f"{scope} {target!r}"


@dataclass(frozen=True)
class Switches:
    """The switches that are on, read once per batch."""

    everything: bool
    tenants: frozenset[str]
    tasks: frozenset[str]

    def __bool__(self) -> bool:
        return self.everything or bool(self.tenants) or bool(self.tasks)

    def stops(self, tenant: str, task: str) -> bool:
        return self.everything or tenant in self.tenants or task in self.tasks


def switches_on() -> Switches:
    """One query."""
    rows = list(KillSwitch.objects.filter(enabled=True).values_list("scope", "target"))
    return Switches(
        everything=any(scope == KillSwitchScope.GLOBAL for scope, _ in rows),
        tenants=frozenset(t for scope, t in rows if scope == KillSwitchScope.TENANT),
        tasks=frozenset(t for scope, t in rows if scope == KillSwitchScope.TASK),
    )


def stopped(occurrences: Iterable[Occurrence], switches: Switches) -> list[Occurrence]:
    """The occurrences (loaded with their schedule) that a switch that is on stops."""
    if not switches:
        return []
    return [row for row in occurrences if switches.stops(row.schedule.tenant, row.task)]


def stops(occurrence: Occurrence) -> bool:
    """Whether a switch that is on covers this occurrence now (two queries at most).

    For a worker about to run a delivery that left the outbox before the switch went on.
    """
    switches = switches_on()
    return bool(switches) and switches.stops(occurrence.schedule.tenant, occurrence.task)
