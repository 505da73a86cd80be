"""Approval of sensitive tasks, quotas at creation and at handoff, secrets refused in payloads."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from celery import current_app
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.test import override_settings

from scheduler_app import services
from scheduler_app.clock import FakeClock
from scheduler_app.errors import ScheduleStateError, ScheduleValidationError, StaleVersion
from scheduler_app.models import OccurrenceState, ScheduleStatus, TenantQuota
from scheduler_app.services import approve_schedule
from tests.integration.support import START, MemoryPublisher, reload, rows, schedule, ticker

pytestmark = pytest.mark.django_db


def user(name: str, *, may_approve: bool) -> Any:
    person = get_user_model().objects.create_user(name)
    if may_approve:
        person.user_permissions.add(Permission.objects.get(codename="approve_schedule"))
    return get_user_model().objects.get(pk=person.pk)  # fresh permission cache


@override_settings(SCHEDULER_APPROVAL_TASKS=["demo.dig*"])
def test_a_new_schedule_of_a_task_needing_approval_waits_for_an_approver() -> None:
    clock = FakeClock(START)
    target = schedule(clock, task="demo.digest", kind="interval", rule="60s", kwargs={"topic": "x"})
    assert target.status == ScheduleStatus.AWAITING_APPROVAL
    clock.advance(300)
    ticker(MemoryPublisher(), clock).tick()
    assert rows(target) == []  # the beat ignores it
    with pytest.raises(PermissionError, match="mallory lacks the permission"):
        approve_schedule(target.pk, version=1, user=user("mallory", may_approve=False), now=START)
    approver = user("alice", may_approve=True)
    approved = approve_schedule(target.pk, version=1, user=approver, now=clock.now())
    assert (approved.status, approved.approved_version, approved.approved_by) == (
        ScheduleStatus.ACTIVE,
        1,
        "alice",
    )
    assert approved.approved_at == clock.now()
    assert approved.next_run_at >= clock.now()  # the wait is not caught up


@override_settings(SCHEDULER_APPROVAL_TASKS=["demo.digest"])
def test_a_new_version_needs_approval_again_and_only_that_version_can_be_approved() -> None:
    clock = FakeClock(START)
    target = schedule(clock, task="demo.digest", kind="interval", rule="60s", kwargs={"topic": "x"})
    alice = user("alice", may_approve=True)
    approve_schedule(target.pk, version=1, user=alice, now=START)
    edited = services.update_schedule(target.pk, expected_version=1, clock=clock, rule="120s")
    assert (edited.version, edited.status) == (2, ScheduleStatus.AWAITING_APPROVAL)
    with pytest.raises(StaleVersion, match="you approved version 1"):
        approve_schedule(target.pk, version=1, user=alice, now=START)
    approve_schedule(target.pk, version=2, user=alice, now=START)
    assert reload(target).status == ScheduleStatus.ACTIVE
    with pytest.raises(ScheduleStateError, match="not awaiting approval"):
        approve_schedule(target.pk, version=2, user=alice, now=START)


def test_a_task_marked_needs_approval_waits_and_the_command_approves_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        current_app.tasks["demo.hourly_sync"], "needs_approval", True, raising=False
    )
    target = schedule(FakeClock(START), task="demo.hourly_sync", kind="cron", rule="0 * * * *")
    assert target.status == ScheduleStatus.AWAITING_APPROVAL
    user("alice", may_approve=True)
    out = StringIO()
    call_command(
        "approve_schedule", str(target.pk), "--schedule-version", "1", "--user", "alice", stdout=out
    )
    assert "version 1 approved by alice; status active" in out.getvalue()
    with pytest.raises(CommandError, match="no user named 'bob'"):
        call_command("approve_schedule", str(target.pk), "--schedule-version", "1", "--user", "bob")


def test_a_tenant_active_schedule_quota_refuses_creation_with_a_clear_error() -> None:
    TenantQuota.objects.create(tenant="acme", max_active_schedules=1)
    clock = FakeClock(START)
    schedule(clock, tenant="acme", kind="cron", rule="0 * * * *")
    with pytest.raises(ScheduleValidationError) as refused:
        schedule(clock, tenant="acme", kind="cron", rule="0 8 * * *")
    assert refused.value.field == "tenant" and refused.value.code == "quota"
    assert "tenant 'acme' has 1 active schedules, its quota is 1" in refused.value.message
    schedule(clock, tenant="globex", kind="cron", rule="0 8 * * *")  # other tenants are free


def test_max_per_day_skips_occurrences_beyond_the_quota_at_handoff() -> None:
    from scheduler_app.services.operator import run_now

    clock = FakeClock(START)  # Monday 00:00:10 UTC
    target = schedule(clock, kind="cron", rule="0 9,10,11 * * *", max_per_day=3)
    clock.set(START + timedelta(hours=8))
    run_now(target.pk, clock=clock)  # an operator's extra run uses one of today's three
    for hour in (9, 10, 11):
        clock.set(START.replace(hour=hour, second=0))
        ticker(MemoryPublisher(), clock).tick()
    states = [(row.trigger, row.state, row.reason) for row in rows(target)]
    assert states == [
        ("manual", OccurrenceState.DISPATCHED, ""),
        ("scheduled", OccurrenceState.DISPATCHED, ""),
        ("scheduled", OccurrenceState.DISPATCHED, ""),
        ("scheduled", OccurrenceState.SKIPPED, "quota_per_day"),
    ]
    clock.set(START.replace(hour=9, second=0) + timedelta(days=1))  # a new day, a new quota
    ticker(MemoryPublisher(), clock).tick()
    assert rows(target)[-1].state == OccurrenceState.DISPATCHED


def test_a_tenant_hourly_quota_skips_occurrences_beyond_it() -> None:
    TenantQuota.objects.create(tenant="acme", max_occurrences_per_hour=2)
    clock = FakeClock(START)
    first = schedule(clock, tenant="acme", kind="interval", rule="60s")
    second = schedule(clock, tenant="acme", kind="interval", rule="60s")
    ticker(MemoryPublisher(), clock).tick()
    clock.advance(60)
    ticker(MemoryPublisher(), clock).tick()
    reasons = sorted(row.reason for row in rows(first) + rows(second))
    assert reasons == ["", "", "quota_tenant_hour", "quota_tenant_hour"]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"password": "hunter2"}, "kwargs.password"),
        ({"smtp": {"api_key": "k"}}, "kwargs.smtp.api_key"),
        ({"targets": [{"accessToken": "t"}]}, "kwargs.targets[0].accessToken"),
    ],
)
def test_secret_looking_keys_are_refused_with_a_pointer_to_references(
    payload: dict, field: str
) -> None:
    with pytest.raises(ScheduleValidationError) as refused:
        schedule(FakeClock(START), kind="cron", rule="0 8 * * *", kwargs=payload)
    assert refused.value.field == field and refused.value.code == "secret_in_payload"
    assert "pass a reference instead (payload_ref" in refused.value.message


def test_references_to_secrets_and_ordinary_keys_are_accepted() -> None:
    payload = {"password_ref": "vault:smtp", "token_name": "CRM", "max_tokens": 5, "pin_id": 1}
    created = schedule(FakeClock(START), kind="cron", rule="0 8 * * *", kwargs=payload)
    assert reload(created).kwargs == payload


def test_non_json_numbers_are_refused() -> None:
    with pytest.raises(ScheduleValidationError, match="not valid JSON"):
        schedule(FakeClock(START), kind="cron", rule="0 8 * * *", kwargs={"ratio": float("nan")})
