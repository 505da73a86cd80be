"""One tenant never acts on another: the services that put a schedule's work back in motion.

Attacked (docs/guarantees.md, integrity table: "one tenant never acts on another ...
``tenancy.check_access`` in every service"): a staff member of tenant ``a`` who holds every
scheduler permission calls, with the ids of tenant ``b``'s rows, the services the existing
tenancy tests leave out: replay, backfill, approve, resume, restore. Each must refuse with
``TenantForbidden`` and write nothing; the same call by a member of ``b`` goes through, so the
refusal is the tenant's and not the setup's.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from scheduler_app import services
from scheduler_app.clock import FakeClock
from scheduler_app.models import (
    Occurrence,
    OccurrenceState,
    Schedule,
    ScheduleAuditEvent,
    ScheduleStatus,
)
from scheduler_app.safety.tenancy import TenantForbidden
from tests.integration.admin.support import staff
from tests.integration.support import START, schedule
from tests.integration.worker_support import due_one

pytestmark = pytest.mark.django_db
EVERY_PERMISSION = (
    "view_schedule",
    "add_schedule",
    "change_schedule",
    "delete_schedule",
    "pause_schedule",
    "run_schedule",
    "approve_schedule",
    "replay_occurrence",
    "assign_owner",
)
Action = Callable[[User], Any]


def replay(clock: FakeClock) -> Action:
    occurrence = due_one(clock, tenant="b")
    Occurrence.objects.filter(pk=occurrence.pk).update(state=OccurrenceState.FAILED, reason="lost")
    return lambda user: services.replay_occurrence(occurrence.pk, clock=clock, user=user)


def backfill(clock: FakeClock) -> Action:
    target = schedule(clock, kind="interval", rule="60s", tenant="b")
    clock.advance(timedelta(minutes=5))
    return lambda user: services.backfill(
        target.pk, start=START, end=clock.now(), clock=clock, user=user
    )


def approve(clock: FakeClock) -> Action:
    with override_settings(SCHEDULER_APPROVAL_TASKS=["demo.ping"]):
        target = schedule(clock, kind="interval", rule="60s", tenant="b")
    assert target.status == ScheduleStatus.AWAITING_APPROVAL
    return lambda user: services.approve_schedule(target.pk, version=1, clock=clock, user=user)


def resume(clock: FakeClock) -> Action:
    target = schedule(clock, kind="interval", rule="60s", tenant="b")
    services.pause_schedule(target.pk, clock=clock)
    return lambda user: services.resume_schedule(target.pk, clock=clock, user=user)


def restore(clock: FakeClock) -> Action:
    target = schedule(clock, kind="interval", rule="60s", tenant="b")
    services.cancel_schedule(target.pk, clock=clock)
    return lambda user: services.restore_schedule(target.pk, clock=clock, user=user)


def written() -> tuple[object, ...]:
    """Everything an action may change: the schedules, the occurrences, the audit trail."""
    return (
        sorted(Schedule.objects.values_list("id", "status", "version", "approved_version")),
        sorted(Occurrence.objects.values_list("id", "state", "attempts")),
        ScheduleAuditEvent.objects.count(),
    )


@pytest.mark.parametrize("setup", [replay, backfill, approve, resume, restore])
def test_staff_of_another_tenant_with_every_permission_change_nothing(
    setup: Callable[[FakeClock], Action],
) -> None:
    clock = FakeClock(START)
    action = setup(clock)
    outsider = staff("otto", *EVERY_PERMISSION, tenants=("a",))
    before = written()

    with pytest.raises(TenantForbidden):
        action(outsider)
    assert written() == before

    action(staff("bea", *EVERY_PERMISSION, tenants=("b",)))  # the tenant's own staff may
    assert written() != before
