"""Schedule changes while an occurrence runs, and permissions checked at execution time."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User

from scheduler_app import services
from scheduler_app.models import Occurrence, OccurrenceState, Schedule, ScheduleStatus
from tests.acceptance.e2e import Beat, Probe, Workers, next_second, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

RUN = 2.5


def test_paused_or_deleted_while_running_finishes_and_creates_nothing_new(
    workers: Workers, beat: Beat, probe: Callable[[], Probe]
) -> None:
    """The running occurrence finishes and its result is recorded (pausing or cancelling only
    stops occurrences not started yet); no new occurrence is created afterwards."""
    workers.start(concurrency=4)
    anchor = next_second()
    probes = {name: probe() for name in ("pause_keep", "pause_cancel", "delete")}
    schedules = {
        name: services.create_schedule(
            task="e2e.sleep",
            kind="interval",
            rule="3s",
            anchor=anchor,
            on_pause="cancel" if name == "pause_cancel" else "keep",
            overlap_policy="allow",
            kwargs=probes[name].kwargs(seconds=RUN),
        )
        for name in probes
    }

    def all_running() -> bool:
        return Occurrence.objects.filter(
            schedule__in=schedules.values(), state=OccurrenceState.RUNNING
        ).count() == len(schedules)

    wait_for(all_running, "the first occurrences to run", workers, beat=beat)
    paused_at = beat.ticker.clock.now()
    services.pause_schedule(schedules["pause_keep"].pk)
    services.pause_schedule(schedules["pause_cancel"].pk)
    assert services.delete_schedule(schedules["delete"].pk) == "cancelled"  # history kept
    stopped_at = {
        name: Schedule.objects.get(pk=schedule.pk) for name, schedule in schedules.items()
    }
    assert stopped_at["pause_keep"].status == ScheduleStatus.PAUSED
    assert stopped_at["pause_cancel"].status == ScheduleStatus.PAUSED
    assert stopped_at["delete"].status == ScheduleStatus.CANCELLED

    def all_succeeded() -> bool:
        return Occurrence.objects.filter(
            schedule__in=schedules.values(), state=OccurrenceState.SUCCEEDED
        ).count() == len(schedules)

    wait_for(all_succeeded, "the running occurrences to finish", workers, beat=beat)
    # Past the next slot (the anchor + 3 s), with the beat still ticking: nothing new.
    next_slot = anchor + timedelta(seconds=3)
    wait_for(lambda: beat.ticker.clock.now() > next_slot, "the next slot to pass", beat=beat)
    beat.wait_ticks(3)

    for name, schedule in schedules.items():
        occurrences = list(Occurrence.objects.filter(schedule=schedule))
        assert [(o.state, o.reason, o.attempts) for o in occurrences] == [
            (OccurrenceState.SUCCEEDED, "", 1)
        ], name
        assert occurrences[0].created_at < paused_at
        assert occurrences[0].finished_at is not None
        assert occurrences[0].finished_at > paused_at
        runs = probes[name].runs()
        assert [run["outcome"] for run in runs] == ["done"], name


def test_owner_deactivated_fails_forbidden_without_running(
    workers: Workers, beat: Beat, probe: Callable[[], Probe]
) -> None:
    workers.start(concurrency=2)
    owner = User.objects.create_user("e2e-owner")
    owner.user_permissions.add(Permission.objects.get(codename="run_schedule"))
    task = probe()
    schedule = services.create_schedule(
        owner=owner,
        task="e2e.effect",
        kind="interval",
        rule="2s",
        anchor=next_second(),
        kwargs=task.kwargs(),
    )
    wait_for(
        lambda: Occurrence.objects.filter(
            schedule=schedule, state=OccurrenceState.SUCCEEDED
        ).exists(),
        "a run while the owner is active",
        workers,
        beat=beat,
    )
    before_deactivation = beat.ticker.clock.now()
    # Deactivated behind Django's back (a directory sync, raw SQL): no signal pauses the
    # schedule, so the worker's check before each run is what stops it.
    User.objects.filter(pk=owner.pk).update(is_active=False)
    deactivated_at = beat.ticker.clock.now()
    wait_for(
        lambda: Occurrence.objects.filter(
            schedule=schedule, state=OccurrenceState.FAILED, reason="forbidden"
        ).exists(),
        "the next occurrence to be refused",
        workers,
        beat=beat,
    )
    stored = Schedule.objects.get(pk=schedule.pk)
    assert stored.status == "paused" and "deactivated" in stored.pause_note  # the worker paused it
    services.pause_schedule(schedule.pk)
    wait_for(
        lambda: (
            not Occurrence.objects.filter(
                schedule=schedule, state__in=(OccurrenceState.PENDING, OccurrenceState.DISPATCHED)
            ).exists()
        ),
        "the last delivery to be handled",
        workers,
        beat=beat,
    )

    occurrences = list(Occurrence.objects.filter(schedule=schedule).order_by("scheduled_for"))
    succeeded = [o for o in occurrences if o.state == OccurrenceState.SUCCEEDED]
    forbidden = [o for o in occurrences if o.state == OccurrenceState.FAILED]
    assert succeeded and forbidden
    assert len(succeeded) + len(forbidden) == len(occurrences)
    # Everything claimed after the deactivation was refused before running: no retry, no
    # attempt counted, the task body never entered.
    assert all(o.started_at is not None and o.started_at < deactivated_at for o in succeeded)
    assert all((o.reason, o.attempts) == ("forbidden", 0) for o in forbidden)
    assert all(o.finished_at and o.finished_at >= before_deactivation for o in forbidden)
    assert task.executions() == len(succeeded)
    assert set(task.sink()) == {o.idempotency_key for o in succeeded}
