"""Each scheduler process hands off only the targets it serves; no stored target stops it.

Security review finding 1: a row whose target has no adapter in this process used to count as
a broker failure, was claimed again every tick (oldest first) and stopped the handoff.
Finding 7: a stored ``handoff_id`` that is not a UUID broke the occurrence page.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from scheduler_app.clock import FakeClock
from scheduler_app.dispatch.outbox import dispatch_batch, hand_off, has_publishable
from scheduler_app.dispatch.probe import probe
from scheduler_app.djtasks.results import result_row, supersede
from scheduler_app.handoff.router import TargetRouter
from scheduler_app.models import HandoffTarget, Occurrence, OccurrenceState, Schedule
from scheduler_app.safety.handoff import UNPUBLISHABLE
from scheduler_app.services.operator import run_now
from tests.integration.support import START, MemoryPublisher, rows, schedule, ticker

pytestmark = pytest.mark.django_db
LEASE = timedelta(seconds=30)
CELERY_ONLY = frozenset({HandoffTarget.CELERY.value})
DJTASKS_ONLY = frozenset({HandoffTarget.DJANGO_TASKS.value})


class Adapter(MemoryPublisher):
    """One target's adapter (as ``CeleryPublisher`` / ``DjangoTasksPublisher`` declare)."""

    def __init__(self, target: str) -> None:
        super().__init__()
        self.targets = frozenset({target})


def celery_only() -> tuple[TargetRouter, Adapter]:
    """A Celery beat whose environment cannot import django.tasks."""
    celery = Adapter(HandoffTarget.CELERY)
    return TargetRouter({HandoffTarget.CELERY: celery}), celery


def djtasks_only() -> tuple[TargetRouter, Adapter]:
    """What ``run_scheduler`` has."""
    djtasks = Adapter(HandoffTarget.DJANGO_TASKS)
    return TargetRouter({HandoffTarget.DJANGO_TASKS: djtasks}), djtasks


def manual(clock: FakeClock, count: int, target: str) -> list[Occurrence]:
    """``count`` pending occurrences of ``target`` (oldest first)."""
    owner = schedule(clock, kind="cron", rule="0 9 * * *")
    made = []
    for _ in range(count):
        clock.advance(1)
        made.append(run_now(owner, respect_overlap=False, clock=clock))
    Occurrence.objects.filter(pk__in=[row.pk for row in made]).update(target=target)
    return made


def state(row: Occurrence) -> tuple[str, object]:
    row.refresh_from_db()
    return row.state, row.publish_lease_until


def test_rows_of_a_target_not_served_do_not_starve_the_others() -> None:
    """The review's repro (p8): five older django.tasks rows, a beat with Celery only."""
    clock = FakeClock(START)
    stuck = manual(clock, 5, HandoffTarget.DJANGO_TASKS)
    [good] = manual(clock, 1, HandoffTarget.CELERY)
    router, celery = celery_only()
    for tick in range(3):
        now = clock.now() + tick * 10 * timedelta(minutes=1)
        result = dispatch_batch(now, router, limit=5, lease=LEASE, clock_now=clock.now)
        assert not result.failed  # not a broker failure
        assert result.claimed == (1 if tick == 0 else 0)  # the others are not even claimed
    assert celery.ids == [str(good.pk)]
    assert state(good)[0] == OccurrenceState.DISPATCHED
    assert [state(row) for row in stuck] == [(OccurrenceState.PENDING, None)] * 5


def test_a_full_batch_of_another_targets_rows_does_not_stop_the_beat() -> None:
    clock = FakeClock(START)
    manual(clock, 3, HandoffTarget.DJANGO_TASKS)
    [good] = manual(clock, 1, HandoffTarget.CELERY)
    router, celery = celery_only()
    clock.advance(1)
    result = ticker(router, clock, BATCH_SIZE=3).tick()  # type: ignore[arg-type]
    assert (result.published, result.broker_failed) == (1, False)
    assert celery.ids == [str(good.pk)]


def test_the_rows_left_are_handed_off_by_the_process_that_serves_them() -> None:
    clock = FakeClock(START)
    theirs = manual(clock, 2, HandoffTarget.DJANGO_TASKS)
    router, _ = celery_only()
    dispatch_batch(clock.now(), router, limit=10, lease=LEASE, clock_now=clock.now)
    router, djtasks = djtasks_only()
    result = dispatch_batch(clock.now(), router, limit=10, lease=LEASE, clock_now=clock.now)
    assert (result.published, result.failed) == (2, False)
    assert djtasks.ids == [str(row.pk) for row in theirs]


def test_run_scheduler_leaves_a_new_celery_occurrence_in_the_outbox_unleased() -> None:
    """A due Celery schedule under run_scheduler: its fresh row (inserted leased to this
    process) is given back at once, the tick's other rows go on, no broker failure."""
    clock = FakeClock(START)
    celery_row_schedule = schedule(clock, kind="cron", rule="* * * * *")
    djtasks_schedule = schedule(clock, kind="cron", rule="* * * * *")
    Schedule.objects.filter(pk=djtasks_schedule.pk).update(target=HandoffTarget.DJANGO_TASKS)
    router, djtasks = djtasks_only()
    clock.set(START + timedelta(minutes=1))
    result = ticker(router, clock).tick()  # type: ignore[arg-type]
    assert (result.created, result.published, result.broker_failed) == (2, 1, False)
    [theirs] = rows(celery_row_schedule)
    assert state(theirs) == (OccurrenceState.PENDING, None)  # free for the Celery beat now
    [mine] = rows(djtasks_schedule)
    assert djtasks.ids == [str(mine.pk)]
    assert not has_publishable(clock.now(), DJTASKS_ONLY)
    assert has_publishable(clock.now(), CELERY_ONLY)


def test_the_probe_sees_only_the_targets_served() -> None:
    clock = FakeClock(START)
    manual(clock, 1, HandoffTarget.CELERY)
    now = clock.now()
    assert probe(now, DJTASKS_ONLY).publishable is False
    assert probe(now, CELERY_ONLY).publishable is True
    assert probe(now).publishable is True  # a publisher that declares no targets: all


def test_a_row_whose_target_is_unknown_is_parked_not_retried() -> None:
    """A value stored where the constraint is missing (a database not migrated yet, a copy):
    here the row as read, since the constraint refuses the write."""
    clock = FakeClock(START)
    [odd, good] = manual(clock, 2, HandoffTarget.CELERY)
    claimed = list(Occurrence.objects.filter(pk__in=[odd.pk, good.pk]).order_by("created_at"))
    claimed[0].target = "rq"
    router, celery = celery_only()
    result = hand_off(claimed, clock.now(), router, clock.now)
    assert (result.published, result.failed) == (1, False)
    assert celery.ids == [str(good.pk)]
    odd.refresh_from_db()
    assert (odd.state, odd.reason) == (OccurrenceState.FAILED, UNPUBLISHABLE)
    assert "unknown handoff target 'rq'" in odd.last_error
    assert "celery, django_tasks" in odd.last_error


@pytest.mark.parametrize("model", [Schedule, Occurrence])
def test_the_database_refuses_an_unknown_target(model: type[Schedule | Occurrence]) -> None:
    clock = FakeClock(START)
    manual(clock, 1, HandoffTarget.CELERY)
    with pytest.raises(IntegrityError), transaction.atomic():
        model.objects.update(target="rq")


def test_a_publisher_that_declares_no_targets_gets_every_row() -> None:
    clock = FakeClock(START)
    made = manual(clock, 2, HandoffTarget.DJANGO_TASKS) + manual(clock, 1, HandoffTarget.CELERY)
    broker = MemoryPublisher()  # declares no targets (a test fake, an old custom one)
    dispatch_batch(clock.now(), broker, limit=10, lease=LEASE, clock_now=clock.now)
    assert broker.ids == [str(row.pk) for row in made]


# Finding 7: a handoff id that is not a UUID (written past the adapter).


def test_a_non_uuid_handoff_id_has_no_result_row_and_supersedes_nothing() -> None:
    assert result_row("not-a-uuid") is None
    assert result_row("") is None
    assert supersede("not-a-uuid", by="x", now=timezone.now()) == 0
    assert DBTaskResult.objects.count() == 0


def test_the_occurrence_page_shows_a_non_uuid_handoff_id(admin_client: Client) -> None:
    """The review's repro (p10): the page answered 500."""
    clock = FakeClock(START)
    [row] = manual(clock, 1, HandoffTarget.CELERY)
    Occurrence.objects.filter(pk=row.pk).update(
        target=HandoffTarget.DJANGO_TASKS, handoff_id="not-a-uuid"
    )
    page = admin_client.get(reverse("admin:scheduler_app_occurrence_change", args=[row.pk]))
    assert page.status_code == 200
