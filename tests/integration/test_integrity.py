"""Integrity: each guarantee attacked through the paths that opened it on bdec21c.

Services with a limited person, rows forced in with the ORM (past every service), forged
deliveries to the worker, a poisoned row in the beat. Each test names the finding it covers.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import pytest
from celery.exceptions import Ignore
from django.contrib.auth.models import Group, Permission, User
from django.test import override_settings

from project.celery import app as celery_app
from project.demo.tasks import ping
from scheduler_app import services
from scheduler_app.beat import DurableScheduler
from scheduler_app.clock import FakeClock
from scheduler_app.conf import SchedulerSettings
from scheduler_app.dispatch import materialize
from scheduler_app.errors import (
    DuplicateKey,
    OperatorPermissionDenied,
    ScheduleStateError,
    ScheduleValidationError,
    StaleVersion,
)
from scheduler_app.models import (
    AuditAction,
    KillSwitch,
    Occurrence,
    OccurrenceState,
    Schedule,
    ScheduleAuditEvent,
    ScheduleStatus,
    ScheduleVersion,
)
from scheduler_app.publishing import TaskCall
from scheduler_app.safety.actors import COMMAND
from scheduler_app.safety.killswitch import set_kill_switch, visible_to
from scheduler_app.safety.permissions import owner_choices
from scheduler_app.safety.quotas import may_change
from scheduler_app.safety.tenancy import TenantForbidden
from scheduler_app.services import backfills
from tests.integration.support import START, MemoryPublisher, reload, rows, schedule, ticker
from tests.integration.worker_support import due_one, fetch, run

pytestmark = pytest.mark.django_db
APPROVAL = {"SCHEDULER_APPROVAL_TASKS": ["demo.ping"]}


def person(name: str, *perms: str, tenant: str = "", superuser: bool = False) -> User:
    if superuser:
        user = User.objects.create_superuser(name, f"{name}@example.com", "x")
    else:
        user = User.objects.create_user(name, is_staff=True)
    for codename in perms:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    if tenant:
        user.groups.add(Group.objects.get_or_create(name=f"tenant:{tenant}")[0])
    return User.objects.get(pk=user.pk)  # fresh: no cached permissions or tenants


class BuildingPublisher(MemoryPublisher):
    """Builds each message's ``send_task`` arguments, as the Celery publisher does."""

    def publish(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        for row in occurrences:
            TaskCall.of(row, START)
        return super().publish(occurrences)


# -- approval ----------------------------------------------------------------------------------


@override_settings(**APPROVAL)
def test_a_backfill_of_a_schedule_awaiting_approval_is_refused() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60s", task="demo.ping")
    assert target.status == ScheduleStatus.AWAITING_APPROVAL
    clock.advance(600)
    with pytest.raises(ScheduleStateError, match="awaiting_approval"):
        services.backfill(target, start=START, end=clock.now(), clock=clock)
    assert rows(target) == []


@override_settings(**APPROVAL)
def test_cancel_undo_resume_never_activates_an_unapproved_version() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60s", task="demo.ping")
    services.cancel_schedule(target.pk, clock=clock)
    restored = services.restore_schedule(target.pk, clock=clock)
    assert restored.status == ScheduleStatus.AWAITING_APPROVAL
    with pytest.raises(ScheduleStateError):
        services.resume_schedule(target.pk, clock=clock)
    # Paused while waiting (forced with the ORM), then resumed: it waits again.
    Schedule.objects.filter(pk=target.pk).update(status=ScheduleStatus.PAUSED)
    assert services.resume_schedule(target.pk, clock=clock).status == (
        ScheduleStatus.AWAITING_APPROVAL
    )


@override_settings(**APPROVAL)
def test_approval_is_of_the_version_shown_not_of_an_edit_made_since() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60s", task="demo.ping")
    approver = person("ann", "approve_schedule")
    services.update_schedule(target.pk, expected_version=1, clock=clock, kwargs={"n": 2})
    with pytest.raises(StaleVersion):
        services.approve_schedule(target.pk, version=1, user=approver, clock=clock)
    assert reload(target).status == ScheduleStatus.AWAITING_APPROVAL
    services.approve_schedule(target.pk, version=2, user=approver, clock=clock, reason="ok")
    entry = ScheduleAuditEvent.objects.get(schedule_id=target.pk, action=AuditAction.APPROVED)
    assert (entry.by, entry.version, entry.reason) == ("ann", 2, "ok")


@override_settings(**APPROVAL)
def test_an_unapproved_row_forced_into_the_outbox_is_not_published() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60s", task="demo.ping")
    Schedule.objects.filter(pk=target.pk).update(status=ScheduleStatus.ACTIVE)  # past approval
    clock.set(reload(target).next_run_at)
    broker = MemoryPublisher()
    ticker(broker, clock).tick()
    assert broker.sent == []
    [row] = rows(target)
    assert (row.state, row.reason) == (OccurrenceState.SKIPPED, "not_approved")


def test_the_worker_refuses_an_unapproved_or_cancelled_schedules_occurrence() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock)  # dispatched, then the schedule was sent back for approval
    Schedule.objects.filter(pk=occurrence.schedule_id).update(
        status=ScheduleStatus.AWAITING_APPROVAL
    )
    run(ping, occurrence, clock)
    assert (fetch(occurrence).state, fetch(occurrence).reason) == (
        OccurrenceState.SKIPPED,
        "not_approved",
    )


def test_the_worker_refuses_an_occurrence_of_a_version_never_approved() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock)
    with override_settings(**APPROVAL):  # the task needs approval; version 1 never had it
        run(ping, occurrence, clock)
    row = fetch(occurrence)
    assert (row.state, row.reason, row.attempts) == (OccurrenceState.SKIPPED, "not_approved", 0)


def test_the_worker_refuses_an_occurrence_of_a_cancelled_schedule_forced_back() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock)
    Schedule.objects.filter(pk=occurrence.schedule_id).update(status=ScheduleStatus.CANCELLED)
    run(ping, occurrence, clock)
    row = fetch(occurrence)
    assert (row.state, row.reason) == (OccurrenceState.CANCELLED, "schedule_cancelled")


# -- early runs ----------------------------------------------------------------------------------


def test_a_forged_message_before_not_before_does_not_run_the_work() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock)
    later = clock.now() + timedelta(minutes=5)
    Occurrence.objects.filter(pk=occurrence.pk).update(not_before=later)  # jitter or delay
    for state in (OccurrenceState.DISPATCHED, OccurrenceState.PENDING):
        Occurrence.objects.filter(pk=occurrence.pk).update(state=state)
        run(ping, occurrence, clock)
        row = fetch(occurrence)
        assert (row.state, row.attempts) == (state, 0)  # left as it is, never started
    clock.set(later)
    run(ping, fetch(occurrence), clock)  # the outbox's own message, when it is due
    assert fetch(occurrence).state == OccurrenceState.SUCCEEDED


# -- owner ---------------------------------------------------------------------------------------


def test_a_person_without_assign_owner_cannot_blank_the_owner() -> None:
    clock = FakeClock(START)
    mallory = person("mallory", "add_schedule", "change_schedule")
    target = schedule(clock, kind="interval", rule="60s", user=mallory)
    assert reload(target).owner == mallory
    for blank in (None, ""):
        with pytest.raises(ScheduleValidationError) as caught:
            services.update_schedule(
                target.pk, expected_version=1, clock=clock, user=mallory, owner=blank
            )
        assert caught.value.code == "owner_required"
    assert reload(target).owner == mallory


def test_an_assigner_may_pick_only_active_staff_of_the_tenant_and_no_superuser() -> None:
    clock = FakeClock(START)
    carol = person("carol", "add_schedule", "assign_owner", tenant="a")
    colleague = person("dave", tenant="a")
    stranger = person("erin", tenant="b")
    root = person("root", superuser=True)
    outsider = User.objects.create_user("frank")  # not staff
    choices = set(services_owner_choices(carol, "a"))
    assert colleague.pk in choices and carol.pk in choices
    assert not choices & {stranger.pk, root.pk, outsider.pk}
    for owner in (stranger, root, outsider):
        with pytest.raises(ScheduleValidationError) as caught:
            schedule(clock, kind="interval", rule="60s", user=carol, tenant="a", owner=owner)
        assert caught.value.code == "owner_not_allowed"
    # Offered, but made for another owner it runs with their rights: that takes run_schedule.
    with pytest.raises(OperatorPermissionDenied, match="run_schedule"):
        schedule(clock, kind="interval", rule="60s", user=carol, tenant="a", owner=colleague)
    runner = person("carla", "add_schedule", "assign_owner", "run_schedule", tenant="a")
    made = schedule(clock, kind="interval", rule="60s", user=runner, tenant="a", owner=colleague)
    assert reload(made).owner == colleague


def services_owner_choices(user: Any, tenant: str) -> list[int]:
    return list(owner_choices(user, tenant).values_list("pk", flat=True))


def test_services_refuse_a_person_without_the_permission_or_the_tenant() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60s", tenant="b")
    viewer = person("vic", "view_schedule", tenant="b")
    outsider = person("otto", "change_schedule", "pause_schedule", "run_schedule", tenant="a")
    with pytest.raises(OperatorPermissionDenied):
        schedule(clock, kind="interval", rule="60s", user=viewer, tenant="b")
    for call in (
        lambda user: services.pause_schedule(target.pk, clock=clock, user=user),
        lambda user: services.update_schedule(
            target.pk, expected_version=1, clock=clock, user=user, kwargs={"x": 1}
        ),
        lambda user: services.run_now(target.pk, clock=clock, user=user),
        lambda user: services.cancel_schedule(target.pk, clock=clock, user=user),
    ):
        with pytest.raises(OperatorPermissionDenied):
            call(viewer)
        with pytest.raises(TenantForbidden):
            call(outsider)
    assert reload(target).version == 1 and reload(target).status == ScheduleStatus.ACTIVE


# -- the audit trail -----------------------------------------------------------------------------


def test_every_operator_action_is_in_the_audit_trail_with_who_and_why() -> None:
    clock = FakeClock(START)
    boss = person("boss", superuser=True)
    target = schedule(clock, kind="interval", rule="60s", user=boss)
    services.update_schedule(
        target.pk, expected_version=1, clock=clock, user=boss, kwargs={"n": 1}, reason="more"
    )
    services.pause_schedule(target.pk, clock=clock, user=boss, note="incident")
    services.resume_schedule(target.pk, clock=clock, user=boss, note="fixed")
    services.run_now(target.pk, clock=clock, user=boss, reason="check")
    clock.advance(300)
    services.backfill(target.pk, start=START, end=clock.now(), clock=clock, user=COMMAND)
    services.cancel_schedule(target.pk, clock=clock, user=boss, reason="done")
    services.restore_schedule(target.pk, clock=clock, user=boss, reason="oops")
    trail = list(
        ScheduleAuditEvent.objects.filter(schedule_id=target.pk)
        .order_by("id")
        .values_list("action", "by", "reason")
    )
    assert trail == [
        ("created", "boss", ""),
        ("edited", "boss", "more"),
        ("paused", "boss", "incident"),
        ("resumed", "boss", "fixed"),
        ("run_now", "boss", "check"),
        ("backfill", "command", ""),
        ("cancelled", "boss", "done"),
        ("restored", "boss", "oops"),
    ]


def test_a_refused_action_leaves_no_audit_entry() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60s")
    with pytest.raises(OperatorPermissionDenied):
        services.pause_schedule(target.pk, clock=clock, user=person("nobody"))
    assert not ScheduleAuditEvent.objects.filter(action=AuditAction.PAUSED).exists()


# -- tenants: kill switches and quotas -----------------------------------------------------------


def test_tenant_staff_turn_only_their_own_tenants_switch() -> None:
    alice = person("alice", "change_killswitch", tenant="a")
    for scope, target in (("global", ""), ("task", "demo.ping"), ("tenant", "b")):
        with pytest.raises(TenantForbidden):
            set_kill_switch(scope, target, enabled=True, user=alice, reason="x", now=START)
    assert not KillSwitch.objects.exists()
    set_kill_switch("tenant", "a", enabled=True, user=alice, reason="incident", now=START)
    set_kill_switch("tenant", "b", enabled=True, by="ops", reason="b's own", now=START)
    assert list(visible_to(KillSwitch.objects.all(), alice).values_list("target", flat=True)) == [
        "a"
    ]
    assert not may_change(alice) and may_change(person("root", superuser=True))


def test_a_person_without_the_switch_permission_cannot_turn_one() -> None:
    bob = person("bob", tenant="a")
    with pytest.raises(OperatorPermissionDenied):
        set_kill_switch("tenant", "a", enabled=True, user=bob, reason="x", now=START)


# -- input by type and range -------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"queue": {"a": 1}},
        {"routing_key": ["x"]},
        {"exchange": 5},
        {"priority": 256},
        {"priority": "9"},
        {"priority": True},
        {"queue": "celery.pidbox"},
        {"queue": "amq.direct"},
        {"queue": ""},
        {"queue": "q\n"},
    ],
)
def test_routing_options_are_checked_by_type_and_range(options: dict[str, Any]) -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(FakeClock(START), kind="interval", rule="60s", options=options)
    assert caught.value.field.startswith("options")


@override_settings(SCHEDULER_ALLOWED_QUEUES={"a": ["reports"], "*": ["default"]})
def test_the_queue_allowlist_is_per_tenant() -> None:
    clock = FakeClock(START)
    schedule(clock, kind="interval", rule="60s", tenant="a", options={"queue": "reports"})
    schedule(clock, kind="interval", rule="60s", tenant="z", options={"queue": "default"})
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(clock, kind="interval", rule="60s", tenant="z", options={"queue": "reports"})
    assert caught.value.code == "queue_not_allowed"


# -- no row stops the beat -----------------------------------------------------------------------


def test_a_poisoned_row_is_parked_and_the_others_are_published() -> None:
    clock = FakeClock(START)
    good = schedule(clock, kind="interval", rule="60s")
    bad = schedule(clock, kind="interval", rule="60s")
    Schedule.objects.filter(pk=bad.pk).update(options={"queue": {"a": 1}})  # past the services
    clock.set(max(reload(good).next_run_at, reload(bad).next_run_at))
    broker = BuildingPublisher()
    ticker(broker, clock).tick()
    assert [row.schedule_id for row in broker.sent] == [good.pk]
    [parked] = rows(bad)
    assert (parked.state, parked.reason) == (OccurrenceState.FAILED, "unpublishable")
    assert "options.queue" in parked.last_error
    clock.advance(60)
    ticker(broker, clock).tick()  # the next tick goes on as well
    assert len([row for row in broker.sent if row.schedule_id == good.pk]) == 2


def test_a_schedule_whose_planning_raises_is_parked_with_a_note() -> None:
    clock = FakeClock(START)
    good = schedule(clock, kind="interval", rule="60s")
    bad = schedule(clock, kind="interval", rule="60s")
    Schedule.objects.filter(pk=bad.pk).update(rule="not a number")
    clock.set(max(reload(good).next_run_at, reload(bad).next_run_at))
    broker = MemoryPublisher()
    ticker(broker, clock).tick()
    assert [row.schedule_id for row in broker.sent] == [good.pk]
    parked = reload(bad)
    assert parked.status == ScheduleStatus.PAUSED
    assert parked.paused_by == "scheduler" and "parked by the scheduler" in parked.pause_note


class ExplodingTicker:
    settings = SchedulerSettings()

    def tick(self) -> Any:
        raise KeyError("a bug in a tick")


def test_the_beat_survives_any_exception_of_a_tick(caplog: pytest.LogCaptureFixture) -> None:
    beat = DurableScheduler(app=celery_app, ticker=ExplodingTicker(), lazy=True)
    delays = [beat.tick() for _ in range(3)]
    assert all(delay > 0 for delay in delays) and delays[0] <= delays[-1]
    errors = [r for r in caplog.records if getattr(r, "action", "") == "beat.tick_error"]
    assert len(errors) == 3 and errors[0].exc_info and not errors[1].exc_info


def test_ignore_is_still_what_a_refused_claim_raises() -> None:
    assert issubclass(Ignore, Exception)


def test_positional_args_in_the_wrong_shape_get_a_hint() -> None:
    with pytest.raises(ScheduleValidationError, match="must be a JSON list"):
        schedule(FakeClock(START), kind="interval", rule="60s", args={"n": 1})


def test_a_large_backfill_is_written_in_chunks_rechecked_each_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60s")
    clock.advance(600)
    monkeypatch.setattr(backfills, "BACKFILL_CHUNK", 2)
    written = backfills._insert_chunk
    calls: list[int] = []

    def then_edit(*args: Any, **kwargs: Any) -> int:
        calls.append(1)
        if len(calls) == 2:  # someone edits the schedule between the chunks
            Schedule.objects.filter(pk=target.pk).update(version=9)
        return written(*args, **kwargs)

    monkeypatch.setattr(backfills, "_insert_chunk", then_edit)
    with pytest.raises(ScheduleStateError, match="2 created before it changed"):
        services.backfill(target, start=START, end=START + timedelta(minutes=5), clock=clock)
    assert len(rows(target)) == 2
    Schedule.objects.filter(pk=target.pk).update(version=1)
    monkeypatch.setattr(backfills, "_insert_chunk", written)
    done = services.backfill(target, start=START, end=START + timedelta(minutes=5), clock=clock)
    assert (done.existing, done.created, len(rows(target))) == (2, 4, 6)


def test_a_forged_message_for_a_row_still_in_the_outbox_does_not_run_it() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock)
    Occurrence.objects.filter(pk=occurrence.pk).update(
        state=OccurrenceState.PENDING, publish_lease_until=None, dispatched_at=None
    )  # released to the outbox (a broker failure), or made by another beat, not yet screened
    run(ping, occurrence, clock, forged=True)
    row = fetch(occurrence)
    assert (row.state, row.attempts) == (OccurrenceState.PENDING, 0)


def test_a_row_whose_task_or_payload_differs_from_its_version_does_not_run() -> None:
    clock = FakeClock(START)
    for change in ({"kwargs": {"amount": 1_000_000}}, {"task": "demo.hourly_sync"}):
        occurrence = due_one(clock)
        Occurrence.objects.filter(pk=occurrence.pk).update(**change)  # past the services
        run(ping, occurrence, clock)
        row = fetch(occurrence)
        assert row.attempts <= 1 and row.state != OccurrenceState.SUCCEEDED
        clock.advance(3600)


def test_approving_a_later_version_keeps_the_earlier_approved_runs() -> None:
    clock = FakeClock(START)
    with override_settings(**APPROVAL):
        target = schedule(clock, kind="interval", rule="60s")
        approver = person("ann", "approve_schedule")
        services.approve_schedule(target.pk, version=1, user=approver, clock=clock)
        clock.set(reload(target).next_run_at)
        ticker(MemoryPublisher(), clock).tick()
        [first] = rows(target)
        services.update_schedule(target.pk, expected_version=1, clock=clock, name="renamed")
        services.approve_schedule(target.pk, version=2, user=approver, clock=clock)
        run(ping, first, clock)
        assert fetch(first).state == OccurrenceState.SUCCEEDED


def test_a_missing_version_row_parks_its_schedule_and_the_others_go_on() -> None:
    clock = FakeClock(START)
    good = schedule(clock, kind="interval", rule="60s")
    bad = schedule(clock, kind="interval", rule="60s")
    ScheduleVersion.objects.filter(schedule=bad).delete()
    clock.set(max(reload(good).next_run_at, reload(bad).next_run_at))
    broker = MemoryPublisher()
    ticker(broker, clock).tick()
    assert [row.schedule_id for row in broker.sent] == [good.pk]
    assert reload(bad).status == ScheduleStatus.PAUSED and "missing" in reload(bad).pause_note


def test_a_claim_that_missed_a_version_an_edit_just_made_leaves_the_schedule_due(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On PostgreSQL an edit committed between the claim's snapshot and its row lock hands
    the claim the edited row while its version lookup still sees the snapshot: no version
    id. The row is there: the schedule is not parked, it stays due, and the next tick
    publishes its slot (review 17)."""
    clock = FakeClock(START)
    edited = schedule(clock, kind="interval", rule="60s")
    clock.set(reload(edited).next_run_at)
    claim = materialize.claim_due

    def missing_the_version(now: datetime, batch_size: int) -> list[Schedule]:
        claimed = claim(now, batch_size)
        for row in claimed:
            row.current_version_id = None  # type: ignore[attr-defined]
        return claimed

    monkeypatch.setattr(materialize, "claim_due", missing_the_version)
    broker = MemoryPublisher()
    ticker(broker, clock).tick()
    stored = reload(edited)
    assert broker.sent == [] and not Occurrence.objects.filter(schedule=edited).exists()
    assert (stored.status, stored.pause_note) == (ScheduleStatus.ACTIVE, "")
    assert stored.next_run_at is not None and stored.next_run_at <= clock.now()
    monkeypatch.undo()
    ticker(broker, clock).tick()
    assert [row.schedule_id for row in broker.sent] == [edited.pk]


def test_a_poisoned_zone_in_the_quota_check_parks_that_row_alone() -> None:
    clock = FakeClock(START)
    good = schedule(clock, kind="interval", rule="60s")
    bad = schedule(clock, kind="interval", rule="60s", max_per_day=5)
    clock.set(max(reload(good).next_run_at, reload(bad).next_run_at))
    broker = MemoryPublisher()
    beat = ticker(broker, clock)
    beat.tick()
    clock.advance(60)
    Schedule.objects.filter(pk=bad.pk).update(timezone="Not/AZone")  # past the services
    Occurrence.objects.filter(schedule=bad).delete()
    services.run_now(bad.pk, clock=clock, respect_overlap=False)
    services.run_now(good.pk, clock=clock, respect_overlap=False)
    before = len(broker.sent)
    beat.tick()
    sent = [row.schedule_id for row in broker.sent[before:]]
    assert good.pk in sent and bad.pk not in sent


def test_moving_a_schedule_to_another_tenant_rechecks_the_owner_it_keeps() -> None:
    clock = FakeClock(START)
    boss = person(
        "boss", "add_schedule", "change_schedule", "assign_owner", "run_schedule", tenant="a"
    )
    boss.groups.add(Group.objects.get_or_create(name="tenant:b")[0])
    boss = User.objects.get(pk=boss.pk)
    dave = person("dave", tenant="a")
    target = schedule(clock, kind="interval", rule="60s", tenant="a", user=boss, owner=dave)
    with pytest.raises(ScheduleValidationError) as caught:
        services.update_schedule(target.pk, expected_version=1, clock=clock, user=boss, tenant="b")
    assert caught.value.code == "owner_not_allowed"


def test_a_person_cannot_set_the_origin_or_the_id() -> None:
    clock = FakeClock(START)
    maker = person("maker", "add_schedule")
    for field in ({"origin": "code"}, {"id": "6b0b3a52-5ad3-4a57-9a4a-6c9fb4b0e0f1"}):
        with pytest.raises(ScheduleValidationError) as caught:
            schedule(clock, kind="interval", rule="60s", user=maker, **field)
        assert caught.value.code == "not_allowed"


def test_a_taken_key_on_update_is_a_clear_error() -> None:
    clock = FakeClock(START)
    schedule(clock, kind="interval", rule="60s", key="a")
    other = schedule(clock, kind="interval", rule="60s", key="b")
    with pytest.raises(DuplicateKey):
        services.update_schedule(other.pk, expected_version=1, clock=clock, key="a")


def test_an_unknown_origin_is_refused() -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(FakeClock(START), kind="interval", rule="60s", origin="admin")
    assert caught.value.field == "origin"


def test_a_fixed_delay_schedule_poisoned_while_it_runs_records_the_outcome_once() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, interval_mode="fixed_delay")
    Schedule.objects.filter(pk=occurrence.schedule_id).update(timezone="Not/AZone")
    assert run(ping, occurrence, clock).state == "SUCCESS"
    row = fetch(occurrence)
    assert (row.state, row.attempts) == (OccurrenceState.SUCCEEDED, 1)
    parked = Schedule.objects.get(pk=occurrence.schedule_id)
    assert parked.status == ScheduleStatus.PAUSED and parked.paused_by == "scheduler"
