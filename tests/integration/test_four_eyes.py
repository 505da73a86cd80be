"""Four eyes through the services: with ``SCHEDULER_APPROVAL_REQUIRES_OTHER_PERSON`` the person
who made a version cannot approve it; and, always, a person without ``run_schedule`` cannot
change what another person's schedule runs (its runs are checked against the owner's rights)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User

from scheduler_app import services
from scheduler_app.errors import OperatorPermissionDenied
from scheduler_app.models import Schedule, ScheduleStatus
from scheduler_app.safety.actors import SYSTEM

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def echo_needs_approval(settings: Any) -> None:
    settings.SCHEDULER_ALLOWED_TASKS = ("demo.*",)
    settings.SCHEDULER_APPROVAL_TASKS = ("demo.echo",)


def person(name: str, *codenames: str) -> User:
    user = User.objects.create_user(name, f"{name}@example.com", "pw", is_staff=True)
    for codename in codenames:
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label="scheduler_app", codename=codename)
        )
    return User.objects.get(pk=user.pk)  # fresh: no cached permissions


APPROVER = ("view_schedule", "add_schedule", "change_schedule", "run_schedule", "approve_schedule")


def made_by(user: User, **fields: Any) -> Schedule:
    values = {"task": "demo.echo", "kind": "cron", "rule": "0 8 * * *", **fields}
    return services.create_schedule(user=user, **values)


def test_the_maker_cannot_approve_their_version(settings: Any) -> None:
    settings.SCHEDULER_APPROVAL_REQUIRES_OTHER_PERSON = True
    maker, checker = person("maker", *APPROVER), person("checker", *APPROVER)
    schedule = made_by(maker)
    with pytest.raises(OperatorPermissionDenied, match=r"you made \(part of\) version 1"):
        services.approve_schedule(schedule.pk, version=1, user=maker)
    assert Schedule.objects.get(pk=schedule.pk).status == ScheduleStatus.AWAITING_APPROVAL
    assert services.approve_schedule(schedule.pk, version=1, user=checker).approved_by == "checker"


def test_the_maker_of_an_edit_cannot_approve_it_but_the_creator_can(settings: Any) -> None:
    settings.SCHEDULER_APPROVAL_REQUIRES_OTHER_PERSON = True
    creator, editor = person("creator", *APPROVER), person("editor", *APPROVER)
    schedule = made_by(creator, owner=None)
    services.approve_schedule(schedule.pk, version=1, user=editor)
    services.update_schedule(schedule.pk, expected_version=1, user=editor, kwargs={"a": 1})
    with pytest.raises(OperatorPermissionDenied):
        services.approve_schedule(schedule.pk, version=2, user=editor)
    assert services.approve_schedule(schedule.pk, version=2, user=creator).approved_version == 2


def test_the_system_actor_and_the_setting_off_are_not_affected(settings: Any) -> None:
    settings.SCHEDULER_APPROVAL_REQUIRES_OTHER_PERSON = True
    maker = person("maker", *APPROVER)
    assert services.approve_schedule(made_by(maker).pk, version=1, user=SYSTEM).approved_version
    settings.SCHEDULER_APPROVAL_REQUIRES_OTHER_PERSON = False
    assert services.approve_schedule(made_by(maker).pk, version=1, user=maker).approved_version


# -- an edit of what runs needs run_schedule ----------------------------------------------

EDITOR = ("view_schedule", "change_schedule")


def runners_schedule() -> Schedule:
    runner = person("runner", "view_schedule", "add_schedule", "run_schedule")
    return services.create_schedule(
        task="demo.ping", kind="cron", rule="0 8 * * *", kwargs={"a": 1}, user=runner
    )


@pytest.mark.parametrize(
    "change",
    [{"kwargs": {"a": 2}}, {"args": [1]}, {"task": "demo.echo"}, {"job_type": "x.y"}],
    ids=["kwargs", "args", "task", "job_type"],
)
def test_an_edit_of_what_runs_without_run_schedule_is_refused(change: dict[str, Any]) -> None:
    schedule = runners_schedule()
    editor = person("editor", *EDITOR)
    with pytest.raises(OperatorPermissionDenied, match="run_schedule"):
        services.update_schedule(schedule.pk, expected_version=1, user=editor, **change)
    assert Schedule.objects.get(pk=schedule.pk).version == 1


def test_other_edits_and_editors_who_may_run_are_let_through() -> None:
    schedule = runners_schedule()
    editor = person("editor", *EDITOR)
    renamed = services.update_schedule(schedule.pk, expected_version=1, user=editor, name="x")
    assert renamed.version == 2
    runner2 = person("runner2", *EDITOR, "run_schedule")
    changed = services.update_schedule(
        schedule.pk, expected_version=2, user=runner2, kwargs={"a": 3}
    )
    assert changed.kwargs == {"a": 3}


def test_the_owner_edits_their_own_schedule_without_run_schedule() -> None:
    owner = person("owner", *EDITOR, "add_schedule")
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *", user=owner)
    changed = services.update_schedule(
        schedule.pk, expected_version=1, user=owner, kwargs={"mine": True}
    )
    assert changed.kwargs == {"mine": True}


def test_someone_elses_later_edit_does_not_make_the_maker_a_second_person(
    settings: Any,
) -> None:
    """Review 5: Bob's cost estimate (no new version) or rename (a new one) was logged as the
    newest 'made' entry, and the maker of the task's version could then approve it."""
    settings.SCHEDULER_APPROVAL_REQUIRES_OTHER_PERSON = True
    alice = person("alice", *APPROVER)
    bob = person("bob", "view_schedule", "change_schedule", "run_schedule")
    schedule = made_by(alice, owner=None)
    services.update_schedule(schedule.pk, expected_version=1, user=bob, cost_estimate=3.0)
    with pytest.raises(OperatorPermissionDenied, match="part of"):
        services.approve_schedule(schedule.pk, version=1, user=alice)
    services.update_schedule(schedule.pk, expected_version=1, user=bob, name="renamed")
    with pytest.raises(OperatorPermissionDenied, match="part of"):
        services.approve_schedule(schedule.pk, version=2, user=alice)
    assert Schedule.objects.get(pk=schedule.pk).status == ScheduleStatus.AWAITING_APPROVAL


def test_handing_a_schedule_to_a_runner_needs_run_schedule() -> None:
    """Review 5: edit the kwargs as your own schedule, then hand it back to a runner: the
    payload ran with the runner's rights. Handing it to another owner is an edit of what
    runs too."""
    runner = person("runner", *APPROVER)
    eve = person("eve", "view_schedule", "change_schedule", "assign_owner")
    schedule = services.create_schedule(
        user=runner, task="demo.ping", kind="cron", rule="0 8 * * *", owner=runner
    )
    with pytest.raises(OperatorPermissionDenied, match="kwargs"):
        services.update_schedule(schedule.pk, expected_version=1, user=eve, kwargs={"n": 666})
    mine = services.update_schedule(
        schedule.pk, expected_version=1, user=eve, kwargs={"n": 666}, owner=eve
    )
    assert mine.owner_id == eve.pk  # hers now: it runs with her rights
    with pytest.raises(OperatorPermissionDenied, match="owner"):
        services.update_schedule(schedule.pk, expected_version=2, user=eve, owner=runner)
    assert Schedule.objects.get(pk=schedule.pk).owner_id == eve.pk
