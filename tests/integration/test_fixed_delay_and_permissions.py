"""Fixed-delay intervals, execution-time permissions, and schedules paused or cancelled while an
occurrence runs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from pytest_django.fixtures import Settings

from project.demo.tasks import ping
from scheduler_app.clock import FakeClock
from scheduler_app.models import OccurrenceState, Schedule, ScheduleStatus
from scheduler_app.services import cancel_schedule, delete_schedule, pause_schedule
from scheduler_app.worker import claiming, lifecycle
from tests.integration.support import START, MemoryPublisher, reload, rows, schedule, ticker
from tests.integration.worker_support import due_one, fetch, rate_limited, run

pytestmark = pytest.mark.django_db
MINUTE = timedelta(minutes=1)
LEASE = timedelta(hours=1)


def test_fixed_delay_next_slot_is_completion_plus_the_interval() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    target = schedule(clock, kind="interval", rule="60s", interval_mode="fixed_delay")
    beat = ticker(broker, clock)
    assert target.next_run_at is not None
    clock.set(target.next_run_at)
    beat.tick()
    [first] = rows(target)
    assert reload(target).next_run_at is None  # nothing due while this one is open

    clock.advance(5 * MINUTE)  # a long run: no slot comes due meanwhile
    beat.tick()
    assert len(rows(target)) == 1
    finished = clock.now()
    assert run(ping, fetch(first), clock).state == "SUCCESS"
    assert reload(target).next_run_at == finished + MINUTE

    clock.set(finished + MINUTE)
    beat.tick()
    assert [r.scheduled_for for r in rows(target)] == [first.scheduled_for, finished + MINUTE]
    assert reload(target).next_run_at is None


def test_fixed_delay_counts_from_the_slot_when_the_completion_reads_earlier() -> None:
    """The clock stepped back (or a worker's clock is behind the beat's) while it ran: the
    next slot is still after this one, and its business window is in order. Found by the long
    torture profile, where such a slot failed the window constraint and stalled its batch."""
    clock, broker = FakeClock(START), MemoryPublisher()
    target = schedule(clock, kind="interval", rule="60s", interval_mode="fixed_delay")
    beat = ticker(broker, clock)
    assert target.next_run_at is not None
    slot = target.next_run_at
    clock.set(slot)
    beat.tick()
    [first] = rows(target)
    claim = claiming.claim(first.pk, owner="w", now=slot + timedelta(seconds=1), lease=LEASE)
    stepped_back = slot - 5 * MINUTE
    assert lifecycle.finish(
        first.pk, token=claim.token, state=OccurrenceState.SUCCEEDED, reason="", now=stepped_back
    )
    assert reload(target).next_run_at == slot + MINUTE

    clock.set(slot + MINUTE)
    beat.tick()
    second = rows(target)[-1]
    assert second.scheduled_for == slot + MINUTE
    assert second.window_start == slot <= second.window_end


def test_fixed_delay_waits_for_the_retries_and_counts_a_failure_as_completion() -> None:
    clock = FakeClock(START)
    occurrence = due_one(
        clock, task="tests.rate_limited", interval_mode="fixed_delay", max_attempts=2
    )
    target = reload(occurrence.schedule)
    run(rate_limited, occurrence, clock)
    assert fetch(occurrence).state == OccurrenceState.RETRYING
    assert reload(target).next_run_at is None  # a retry is not a completion
    clock.set(fetch(occurrence).not_before)
    run(rate_limited, fetch(occurrence), clock)
    assert fetch(occurrence).reason == "retries_exhausted"
    assert reload(target).next_run_at == clock.now() + MINUTE


def owner(*, can_run: bool = True) -> User:
    user = User.objects.create_user("ann")
    if can_run:
        user.user_permissions.add(Permission.objects.get(codename="run_schedule"))
    return user


def test_an_owner_with_the_run_permission_runs() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, owner=owner())
    assert run(ping, occurrence, clock).state == "SUCCESS"


@pytest.mark.parametrize("change", ["deactivated", "permission_removed"])
def test_an_owner_no_longer_allowed_fails_forbidden_without_retry(change: str) -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    user = owner()
    occurrence = due_one(clock, broker, owner=user, max_attempts=5)
    if change == "deactivated":
        user.is_active = False
        user.save()
    else:
        user.user_permissions.clear()

    assert run(ping, occurrence, clock).state == "IGNORED"
    row = fetch(occurrence)
    assert (row.state, row.reason, row.attempts) == (OccurrenceState.FAILED, "forbidden", 0)
    assert (row.started_at, row.finished_at) == (None, clock.now())
    ticker(broker, clock).tick()
    assert broker.ids.count(str(occurrence.pk)) == 1  # not retried


def test_permission_is_checked_again_before_a_retry() -> None:
    clock = FakeClock(START)
    user = owner()
    occurrence = due_one(clock, task="tests.rate_limited", owner=user)
    run(rate_limited, occurrence, clock)
    assert fetch(occurrence).state == OccurrenceState.RETRYING
    user.is_active = False
    user.save()
    clock.set(fetch(occurrence).not_before)
    assert run(rate_limited, fetch(occurrence), clock).state == "IGNORED"
    row = fetch(occurrence)
    assert (row.state, row.reason, row.attempts) == (OccurrenceState.FAILED, "forbidden", 1)


@pytest.mark.parametrize(("tenant", "state"), [("blocked", "failed"), ("acme", "succeeded")])
def test_a_custom_permission_check(settings: Settings, tenant: str, state: str) -> None:
    settings.SCHEDULER_PERMISSION_CHECK = "tests.integration.worker_support.tenant_not_blocked"
    clock = FakeClock(START)
    occurrence = due_one(clock, tenant=tenant, owner=owner(can_run=False))
    run(ping, occurrence, clock)
    assert fetch(occurrence).state == state


def running_with_a_waiting_one(
    clock: FakeClock, broker: MemoryPublisher, **fields: object
) -> tuple[Schedule, claiming.Claim]:
    """An every-minute schedule whose first run is still going when the second slot is due."""
    target = schedule(clock, kind="interval", rule="60s", **fields)
    assert target.next_run_at is not None
    clock.set(target.next_run_at)
    beat = ticker(broker, clock)
    beat.tick()
    first = rows(target)[0]
    claim = claiming.claim(first.pk, owner="w", now=clock.now(), lease=LEASE)
    clock.advance(MINUTE)
    beat.tick()
    return target, claim


def finish(claim: claiming.Claim, clock: FakeClock) -> None:
    assert claim.occurrence is not None
    assert lifecycle.finish(
        claim.occurrence.pk,
        token=claim.token,
        state=OccurrenceState.SUCCEEDED,
        reason="",
        now=clock.now(),
    )


def states(target: Schedule) -> list[tuple[str, str]]:
    return [(r.state, r.reason) for r in rows(target)]


def test_paused_while_running_with_on_pause_cancel() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    target, claim = running_with_a_waiting_one(
        clock, broker, overlap_policy="buffer_all", on_pause="cancel"
    )
    assert states(target) == [("running", ""), ("buffered", "")]
    pause_schedule(target.pk, clock=clock)
    assert states(target) == [("running", ""), ("cancelled", "paused")]

    clock.advance(10)
    finish(claim, clock)  # the running one finishes and is recorded; nothing is released
    for _ in range(5):
        clock.advance(MINUTE)
        ticker(broker, clock).tick()
    assert states(target) == [("succeeded", ""), ("cancelled", "paused")]
    assert reload(target).status == ScheduleStatus.PAUSED


def test_paused_while_running_with_on_pause_keep_still_runs_the_waiting_one() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    target, claim = running_with_a_waiting_one(clock, broker, overlap_policy="buffer_all")
    pause_schedule(target.pk, clock=clock)
    finish(claim, clock)
    clock.advance(5 * MINUTE)
    ticker(broker, clock).tick()
    assert states(target) == [("succeeded", ""), ("dispatched", "released")]


@pytest.mark.parametrize("how", ["cancel", "delete"])
def test_cancelled_while_running(how: str) -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    target, claim = running_with_a_waiting_one(clock, broker, interval_mode="fixed_rate")
    second = rows(target)[1]
    assert second.state == OccurrenceState.DISPATCHED  # overlap allow: already published
    if how == "cancel":
        cancel_schedule(target.pk, clock=clock)
    else:
        assert delete_schedule(target.pk, clock=clock) == "cancelled"
    assert states(target) == [("running", ""), ("cancelled", "schedule_cancelled")]

    # The published message of the cancelled one arrives anyway: it does not run.
    assert run(ping, fetch(second), clock).state == "IGNORED"
    clock.advance(10)
    finish(claim, clock)
    clock.advance(10 * MINUTE)
    ticker(broker, clock).tick()
    assert states(target) == [("succeeded", ""), ("cancelled", "schedule_cancelled")]
    assert (reload(target).status, reload(target).next_run_at) == (ScheduleStatus.CANCELLED, None)


def test_fixed_delay_cancelled_while_running_schedules_nothing_more() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    occurrence = due_one(clock, broker, interval_mode="fixed_delay")
    claim = claiming.claim(occurrence.pk, owner="w", now=clock.now(), lease=LEASE)
    cancel_schedule(occurrence.schedule_id, clock=clock)
    clock.advance(10)
    finish(claim, clock)
    target = reload(occurrence.schedule)
    assert (target.status, target.next_run_at) == (ScheduleStatus.CANCELLED, None)
    assert fetch(occurrence).state == OccurrenceState.SUCCEEDED
