"""Security: the worker trusts only the task id; owners cannot be bypassed or picked freely;
only allow-listed tasks are targets. Each test reproduces a finding of the security review."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from pytest_django.fixtures import Settings as SettingsWrapper

from project.celery import app
from project.demo.tasks import ping, record_context
from scheduler_app import events, services
from scheduler_app.clock import FakeClock
from scheduler_app.errors import OperatorPermissionDenied, ScheduleValidationError
from scheduler_app.handoff.protocol import HEADER, context_headers
from scheduler_app.models import OccurrenceAttempt, OccurrenceState, Schedule, ScheduleStatus
from scheduler_app.services import create_schedule, update_schedule
from tests.integration.support import START, reload, schedule
from tests.integration.worker_support import due_one, fetch, run

pytestmark = pytest.mark.django_db


def person(name: str, *perms: str, superuser: bool = False) -> User:
    user = (
        User.objects.create_superuser(name, f"{name}@example.com", "x")
        if superuser
        else User.objects.create_user(name, is_staff=True)
    )
    for codename in perms:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    return User.objects.get(pk=user.pk)  # a fresh instance: no cached permissions


# -- the worker reads the occurrence from the database -----------------------------------------


def test_a_forged_header_cannot_swap_the_payload_or_the_occurrence() -> None:
    clock = FakeClock(START)
    boss = person("boss", superuser=True)
    real = due_one(clock, task="demo.record_context", owner=boss, kwargs={"who": "real"})
    forged_header = {**context_headers(real), "schedule_id": "0" * 32, "objective": "forged"}
    record_context.clock = clock
    try:
        # Same task id as the real occurrence, the attacker's payload and header.
        result = record_context.apply(
            kwargs={"who": "attacker", "record_to": None},
            task_id=str(real.pk),
            headers={HEADER: forged_header},
        )
        # A header that names the real occurrence under another task id is refused.
        other = record_context.apply(
            kwargs={"who": "attacker"}, task_id="f" * 32, headers={HEADER: context_headers(real)}
        )
    finally:
        del record_context.clock
    assert result.state == "SUCCESS"
    seen: dict[str, Any] = result.result
    assert seen["schedule_id"] == str(real.schedule_id)  # from the database, not the header
    assert seen["objective"] == ""
    # The context's newer fields, from the stored occurrence and its version.
    assert (seen["rule"], seen["payload_ref"]) == ("60", "")
    assert seen["fired_at"] is not None
    assert fetch(real).state == OccurrenceState.SUCCEEDED
    assert other.state == "IGNORED"


def test_the_stored_payload_runs_not_the_messages() -> None:
    clock = FakeClock(START)
    real = due_one(clock, task="demo.record_context", kwargs={"who": "real"})
    calls: list[dict[str, Any]] = []
    original = record_context.run

    def spy(**kwargs: Any) -> Any:
        calls.append(kwargs)
        return original(**kwargs)

    record_context.run = spy
    try:
        record_context.clock = clock
        record_context.apply(
            kwargs={"who": "attacker"}, task_id=str(real.pk), headers={HEADER: {"x": 1}}
        )
    finally:
        del record_context.run
        del record_context.clock
    assert calls == [{"who": "real"}]


def test_a_message_for_another_task_is_refused_and_leaves_the_occurrence_alone() -> None:
    clock = FakeClock(START)
    real = due_one(clock, task="demo.record_context")
    assert run(ping, real, clock).state == "IGNORED"
    row = fetch(real)
    assert (row.state, row.attempts) == (OccurrenceState.DISPATCHED, 0)


# -- attempts and events ---------------------------------------------------------------------


def test_attempt_history_and_events_of_a_run_and_a_duplicate(
    django_capture_on_commit_callbacks: Any,
) -> None:
    clock = FakeClock(START)
    finished: list[tuple[str, str]] = []
    duplicates: list[str] = []

    def on_finished(occurrence: Any, state: str, reason: str, **_: Any) -> None:
        finished.append((str(occurrence.pk), state))

    def on_duplicate(kind: str, **_: Any) -> None:
        duplicates.append(kind)

    events.occurrence_finished.connect(on_finished)
    events.duplicate_prevented.connect(on_duplicate)
    try:
        occurrence = due_one(clock)
        clock.advance(timedelta(seconds=3))
        with django_capture_on_commit_callbacks(execute=True):
            assert run(ping, occurrence, clock).state == "SUCCESS"
        assert run(ping, fetch(occurrence), clock).state == "IGNORED"
    finally:
        events.occurrence_finished.disconnect(on_finished)
        events.duplicate_prevented.disconnect(on_duplicate)
    [attempt] = OccurrenceAttempt.objects.filter(occurrence=occurrence)
    assert (attempt.kind, attempt.number, attempt.outcome) == ("run", 1, "succeeded")
    assert attempt.started_at == attempt.finished_at == clock.now()
    assert attempt.worker
    assert finished == [(str(occurrence.pk), "succeeded")]
    assert duplicates == ["delivery"]


# -- owners --------------------------------------------------------------------------------------


def test_the_owner_defaults_to_the_creator_and_only_assigners_pick_another() -> None:
    clock = FakeClock(START)
    ann = person("ann", "add_schedule", "change_schedule")
    boss = person("boss", superuser=True)
    mine = schedule(clock, kind="interval", rule="60s", user=ann)
    assert reload(mine).owner == ann
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(clock, kind="interval", rule="60s", user=ann, owner=boss)
    assert (caught.value.field, caught.value.code) == ("owner", "owner_not_allowed")
    with pytest.raises(ScheduleValidationError):
        update_schedule(mine.pk, expected_version=1, clock=clock, user=ann, owner=boss)
    assigner = person("carol", "assign_owner", "add_schedule", "run_schedule")
    theirs = schedule(clock, kind="interval", rule="60s", user=assigner, owner=ann)
    assert reload(theirs).owner == ann
    update_schedule(mine.pk, expected_version=1, clock=clock, user=boss, owner=assigner)
    stored = reload(mine)
    assert (stored.owner, stored.version) == (assigner, 2)  # an owner change is a version


def test_an_ownerless_schedule_fails_when_an_owner_is_required(settings: SettingsWrapper) -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock)  # created before the setting was turned on
    settings.SCHEDULER_REQUIRE_OWNER = True
    assert run(ping, occurrence, clock).state == "IGNORED"
    row = fetch(occurrence)
    assert (row.state, row.reason) == (OccurrenceState.FAILED, "forbidden")
    assert "SCHEDULER_REQUIRE_OWNER" in row.last_error
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(clock, kind="interval", rule="60s")
    assert (caught.value.field, caught.value.code) == ("owner", "owner_required")
    ann = person("ann", "run_schedule")
    with pytest.raises(ScheduleValidationError):
        update_schedule(
            schedule(clock, kind="interval", rule="60s", owner=ann).pk,
            expected_version=1,
            clock=clock,
            owner=None,
        )
    # Code-declared schedules are system schedules: defined by the deployed code.
    system = due_one(clock, origin="code", key="sys")
    assert run(ping, system, clock).state == "SUCCESS"


@pytest.mark.parametrize("how", ["deleted", "deactivated"])
def test_losing_the_owner_pauses_the_schedule_with_a_note(how: str) -> None:
    clock = FakeClock(START)
    ann = person("ann", "run_schedule")
    target = create_schedule(clock=clock, task="demo.ping", kind="interval", rule="60s", owner=ann)
    if how == "deleted":
        ann.delete()
    else:
        ann.is_active = False
        ann.save()
    stored = Schedule.objects.get(pk=target.pk)
    assert stored.status == ScheduleStatus.PAUSED
    assert f"was {how}" in stored.pause_note and stored.paused_by == "scheduler"


def test_an_owner_found_deactivated_at_run_time_pauses_the_schedule() -> None:
    clock = FakeClock(START)
    ann = person("ann", "run_schedule")
    occurrence = due_one(clock, owner=ann)
    User.objects.filter(pk=ann.pk).update(is_active=False)  # behind the signals' back
    assert run(ping, occurrence, clock).state == "IGNORED"
    stored = Schedule.objects.get(pk=occurrence.schedule_id)
    assert stored.status == ScheduleStatus.PAUSED
    assert "deactivated" in stored.pause_note


# -- targets ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "code"),
    [
        ("celery.group", "forbidden_task"),
        ("celery.chord", "forbidden_task"),
        ("payments.refund_everything", "unknown_task"),
    ],
)
def test_only_allow_listed_occurrence_tasks_are_targets(task: str, code: str) -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(FakeClock(START), task=task, kind="interval", rule="60s")
    assert (caught.value.field, caught.value.code) == ("task", code)


def test_a_registered_task_not_allow_listed_is_refused(settings: SettingsWrapper) -> None:
    @app.task(name="tests.security_unlisted", lazy=False)  # an OccurrenceTask, not marked
    def unlisted(**kwargs: Any) -> None:
        return None

    settings.SCHEDULER_ALLOWED_TASKS = ("tests.security_listed",)
    try:
        with pytest.raises(ScheduleValidationError) as caught:
            schedule(FakeClock(START), task="tests.security_unlisted", kind="interval", rule="60s")
        settings.SCHEDULER_ALLOWED_TASKS = ("tests.security_*",)
        schedule(FakeClock(START), task="tests.security_unlisted", kind="interval", rule="60s")
    finally:
        app.tasks.unregister("tests.security_unlisted")
    assert caught.value.code == "forbidden_task"


def test_a_task_that_is_not_an_occurrence_task_is_refused(settings: SettingsWrapper) -> None:
    from celery import Task

    @app.task(name="tests.security_plain_base", base=Task, schedulable=True, lazy=False)
    def plain(**kwargs: Any) -> None:
        return None

    try:
        with pytest.raises(ScheduleValidationError) as caught:
            schedule(
                FakeClock(START), task="tests.security_plain_base", kind="interval", rule="60s"
            )
    finally:
        app.tasks.unregister("tests.security_plain_base")
    assert caught.value.code == "not_occurrence_task"


def test_taking_another_persons_schedule_as_yours_needs_assign_owner() -> None:
    clock = FakeClock(START)
    runner = person("rita", "add_schedule", "run_schedule")
    editor = person("ed", "change_schedule")
    theirs = schedule(clock, kind="interval", rule="60s", user=runner)
    with pytest.raises(ScheduleValidationError) as caught:
        update_schedule(theirs.pk, expected_version=1, clock=clock, user=editor, owner=editor)
    assert (caught.value.field, caught.value.code) == ("owner", "owner_not_allowed")
    assert "assign_owner" in caught.value.message
    assert reload(theirs).owner == runner


def test_an_editor_without_run_schedule_cannot_make_a_runners_schedule_run_again() -> None:
    """Editing the timing of a completed schedule gives it a slot again, and turning a shadow
    schedule live makes it run: both are runs with the owner's rights (as a run now is)."""
    clock = FakeClock(START)
    runner = person("rita", "add_schedule", "run_schedule", "change_schedule")
    editor = person("ed", "change_schedule")
    soon = (START + timedelta(minutes=5)).isoformat()
    done = schedule(clock, kind="once", rule=soon, user=runner)
    Schedule.objects.filter(pk=done.pk).update(status=ScheduleStatus.COMPLETED, next_run_at=None)
    again = (START + timedelta(hours=1)).isoformat()
    with pytest.raises(OperatorPermissionDenied, match="rule of a schedule that runs as"):
        update_schedule(done.pk, expected_version=1, clock=clock, user=editor, rule=again)
    assert reload(done).status == ScheduleStatus.COMPLETED
    shadow = schedule(clock, kind="interval", rule="60s", user=runner, mode="shadow")
    with pytest.raises(OperatorPermissionDenied, match="mode"):
        update_schedule(shadow.pk, expected_version=1, clock=clock, user=editor, mode="live")
    assert reload(shadow).mode == "shadow"
    # The owner may; an editor may still change what decides neither what nor when it runs.
    update_schedule(done.pk, expected_version=1, clock=clock, user=runner, rule=again)
    assert reload(done).status == ScheduleStatus.ACTIVE
    update_schedule(shadow.pk, expected_version=1, clock=clock, user=editor, expected_every=3600)
    assert reload(shadow).expected_every == 3600


@pytest.mark.parametrize(
    "change",
    [
        {"kind": "interval", "rule": "10s"},
        {"max_count": None},
        {"ends_at": None},
        {"misfire_policy": "catch_up", "catch_up_window": 86_400, "catch_up_limit": 100},
        {"max_attempts": 10},
        {"timezone": "Pacific/Kiritimati"},
        {"max_lateness": 604_800},
        {"deadline": 604_800},
        {"options": {"queue": "payments"}},
        {"retry_delay": 1},
        {"jitter": 3600},
        {"on_pause": "cancel"},
        {"pause_after_failures": 10_000},
        {"objective": "another objective"},
    ],
    ids=[
        "every-10s",
        "max_count",
        "ends_at",
        "catch_up",
        "attempts",
        "timezone",
        "max_lateness",
        "deadline",
        "options",
        "retry_delay",
        "jitter",
        "on_pause",
        "pause_after_failures",
        "objective",
    ],
)
def test_an_editor_without_run_schedule_cannot_make_a_runners_schedule_run_more_often(
    change: dict[str, Any],
) -> None:
    """Review 8 (Low): a ``change_schedule`` user turned a runner's yearly schedule into one
    every ten seconds, three million runs a year more with the runner's rights. When and how
    many times it runs is the owner's (or a runner's) to change, like what it runs."""
    clock = FakeClock(START)
    runner = person("rita", "add_schedule", "run_schedule", "change_schedule")
    editor = person("ed", "change_schedule")
    yearly = schedule(
        clock,
        kind="cron",
        rule="0 8 1 1 *",
        timezone="UTC",
        user=runner,
        starts_at=START,
        max_count=5,
        ends_at=START + timedelta(days=3650),
    )
    with pytest.raises(OperatorPermissionDenied, match="run_schedule"):
        update_schedule(yearly.pk, expected_version=1, clock=clock, user=editor, **change)
    stored = reload(yearly)
    assert (stored.rule, stored.version, stored.max_count) == ("0 8 1 1 *", 1, 5)
    update_schedule(yearly.pk, expected_version=1, clock=clock, user=runner, **change)


EVERY_MINUTE = {"kind": "interval", "rule": "60s"}


def test_an_editor_without_run_schedule_cannot_revive_a_cancelled_or_ended_schedule() -> None:
    """Review 6: undo a runner's cancel (change only), give it every minute, resume (pause):
    it ran with the runner's rights. The same through a paused one-time schedule whose time
    passed. Undoing a cancel and new timing for a finished schedule take run_schedule."""
    clock = FakeClock(START)
    runner = person("rita", "add_schedule", "run_schedule", "change_schedule", "pause_schedule")
    editor = person("bob", "change_schedule", "pause_schedule")
    daily = schedule(clock, kind="cron", rule="0 9 * * *", user=runner)
    services.cancel_schedule(daily.pk, user=runner, clock=clock)
    with pytest.raises(OperatorPermissionDenied, match="run again"):
        services.restore_schedule(daily.pk, user=editor, clock=clock)
    assert reload(daily).status == ScheduleStatus.CANCELLED
    once = schedule(
        clock, kind="once", rule=(START + timedelta(minutes=5)).isoformat(), user=runner
    )
    services.pause_schedule(once.pk, user=runner, clock=clock)
    clock.set(START + timedelta(hours=1))  # its one slot has passed while paused
    with pytest.raises(OperatorPermissionDenied, match="rule of a schedule that runs as"):
        update_schedule(
            once.pk, expected_version=1, clock=clock, user=editor, rule="60s", kind="interval"
        )
    # The owner may do both.
    services.restore_schedule(daily.pk, user=runner, clock=clock)
    update_schedule(
        once.pk, expected_version=1, clock=clock, user=runner, rule="60s", kind="interval"
    )


def test_an_edit_that_will_be_refused_is_refused_before_its_rule_is_evaluated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Review 9 (Low): the refusal came after the validation, so a refused edit still cost
    the evaluation of whatever rule it carried."""
    from scheduler_app.services import schedules as schedule_services

    clock = FakeClock(START)
    runner = person("rita", "add_schedule", "run_schedule", "change_schedule")
    editor = person("ed", "change_schedule")
    theirs = schedule(clock, kind="cron", rule="0 8 1 1 *", timezone="UTC", user=runner)
    evaluated: list[object] = []
    monkeypatch.setattr(
        schedule_services, "validate_definition", lambda values: evaluated.append(values)
    )
    with pytest.raises(OperatorPermissionDenied, match="run_schedule"):
        update_schedule(theirs.pk, expected_version=1, clock=clock, user=editor, rule="* * * * *")
    assert evaluated == []
