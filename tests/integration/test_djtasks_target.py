"""django.tasks as the handoff target: run_scheduler's ticker, django-tasks-db's own worker.

The scheduler side runs with a fake clock; the worker side is django-tasks-db's ``Worker``
(what ``manage.py db_worker`` runs), in this process, with the receivers connected by the app.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.db import DatabaseError
from django.test import Client, override_settings
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from scheduler_app.clock import FakeClock
from scheduler_app.dispatch.reconcile import reconcile
from scheduler_app.djtasks import publisher as djtasks_publisher
from scheduler_app.djtasks.results import SUPERSEDED, result_row
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.handoff import djtasks_compat as compat
from scheduler_app.models import HandoffTarget, Occurrence, OccurrenceState
from scheduler_app.safety.killswitch import set_kill_switch
from scheduler_app.services import create_schedule, update_schedule
from tests.integration import djtasks_support as support
from tests.integration.support import START, rows

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _reset() -> None:
    support.reset()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


def test_a_django_task_is_accepted_and_its_target_recorded(clock: FakeClock) -> None:
    schedule = support.schedule(clock)
    assert schedule.target == HandoffTarget.DJANGO_TASKS
    celery = create_schedule(clock=clock, task="demo.ping", kind="interval", rule="60")
    assert celery.target == HandoffTarget.CELERY


def test_changing_the_task_changes_the_target(clock: FakeClock) -> None:
    schedule = create_schedule(clock=clock, task="demo.ping", kind="interval", rule="60")
    changed = update_schedule(schedule.pk, expected_version=1, clock=clock, task=support.PING)
    assert changed.target == HandoffTarget.DJANGO_TASKS


def test_an_unknown_name_says_both_frameworks(clock: FakeClock) -> None:
    with pytest.raises(ScheduleValidationError, match=r"no django\.tasks task has that module"):
        support.schedule(clock, task="tests.integration.djtasks_support.nothing")


def test_a_django_task_outside_the_allowlist_is_refused(clock: FakeClock, settings) -> None:
    settings.SCHEDULER_ALLOWED_TASKS = ["demo.*"]
    with pytest.raises(ScheduleValidationError, match="is not schedulable"):
        support.schedule(clock)


def test_a_slot_runs_once_through_db_worker_with_its_context(clock: FakeClock) -> None:
    schedule = support.schedule(clock, kwargs={"n": 1})
    clock.advance(1)
    result = support.loop(clock).ticker.tick()
    assert (result.created, result.published) == (1, 1)
    [occurrence] = rows(schedule)
    assert occurrence.target == HandoffTarget.DJANGO_TASKS
    assert occurrence.state == OccurrenceState.DISPATCHED
    [job] = support.jobs()
    assert str(job.id) == occurrence.handoff_id  # stored in the enqueue's transaction
    assert support.work(clock) == 1
    occurrence.refresh_from_db()
    assert occurrence.state == OccurrenceState.SUCCEEDED
    [run] = support.RUNS
    assert run == {
        "kwargs": {"n": 1},  # the stored payload; the scheduler's keyword is taken out
        "occurrence_id": str(occurrence.pk),
        "key": occurrence.idempotency_key,
        "attempt": 1,
    }
    job.refresh_from_db()
    assert job.status == "SUCCESSFUL"
    assert result_row(occurrence.handoff_id) == job  # what the occurrence page links


def test_the_stored_payload_runs_not_the_jobs(clock: FakeClock) -> None:
    support.schedule(clock, kwargs={"n": 1})
    clock.advance(1)
    support.loop(clock).ticker.tick()
    [job] = support.jobs()
    job.args_kwargs["kwargs"]["n"] = 666  # edited in the backend's table
    job.save(update_fields=["args_kwargs"])
    support.work(clock)
    assert [run["kwargs"] for run in support.RUNS] == [{"n": 1}]


def test_a_crash_between_enqueue_and_mark_leaves_no_job(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    schedule = support.schedule(clock)
    clock.advance(1)

    def crash(*args: object, **kwargs: object) -> int:
        raise DatabaseError("connection lost before the mark")

    monkeypatch.setattr(djtasks_publisher, "mark_dispatched", crash)
    loop = support.loop(clock)
    assert loop.ticker.tick().published == 0
    assert support.jobs() == []  # the enqueue rolled back with the mark
    [occurrence] = rows(schedule)
    assert occurrence.state == OccurrenceState.PENDING
    monkeypatch.undo()
    clock.advance(31)  # the publish lease runs out
    assert support.loop(clock).ticker.tick().published == 1
    assert len(support.jobs()) == 1
    support.work(clock)
    assert len(support.RUNS) == 1


def test_a_superseded_job_is_refused_before_the_body(clock: FakeClock) -> None:
    schedule = support.schedule(clock)
    clock.advance(1)
    support.loop(clock).ticker.tick()
    [occurrence] = rows(schedule)
    # Handed off again (the reconciler saw it never start): the first job is no longer its.
    Occurrence.objects.filter(pk=occurrence.pk).update(
        state=OccurrenceState.PENDING, publish_lease_until=None
    )
    first = occurrence.handoff_id
    support.loop(clock).ticker.tick()
    occurrence.refresh_from_db()
    assert occurrence.handoff_id != first
    assert DBTaskResult.objects.get(pk=first).exception_class_path == SUPERSEDED
    DBTaskResult.objects.filter(pk=first).update(status="READY")  # say it was taken anyway
    support.work(clock)
    assert len(support.RUNS) == 1
    assert DBTaskResult.objects.get(pk=first).status == "FAILED"
    occurrence.refresh_from_db()
    assert occurrence.state == OccurrenceState.SUCCEEDED


def test_a_second_run_of_a_finished_job_is_refused(clock: FakeClock) -> None:
    schedule = support.schedule(clock)
    clock.advance(1)
    support.loop(clock).ticker.tick()
    support.work(clock)
    [job] = support.jobs()
    DBTaskResult.objects.filter(pk=job.pk).update(status="READY")  # run again by mistake
    support.work(clock)
    assert len(support.RUNS) == 1
    job.refresh_from_db()
    assert job.status == "FAILED"
    assert "HandoffRefused" in job.exception_class_path
    assert rows(schedule)[0].state == OccurrenceState.SUCCEEDED


def test_an_ordinary_enqueue_runs_unchanged(clock: FakeClock) -> None:
    support.ping.enqueue(n=2)
    support.work(clock)
    [run] = support.RUNS
    assert run == {"kwargs": {"n": 2}, "occurrence_id": None, "key": None, "attempt": None}


def test_retries_enqueue_a_new_job_for_the_same_occurrence(clock: FakeClock) -> None:
    schedule = support.schedule(clock, task=support.FLAKY, max_attempts=3, retry_delay=10)
    support.FAIL_TIMES["left"] = 1
    clock.advance(1)
    loop = support.loop(clock)
    loop.ticker.tick()
    support.work(clock)
    [occurrence] = rows(schedule)
    assert occurrence.state == OccurrenceState.RETRYING
    assert occurrence.not_before > clock.now()
    assert loop.ticker.tick().published == 1  # the retry's job, at once, with run_after
    first, second = support.jobs()
    assert first.status == "FAILED" and second.status == "READY"
    assert second.run_after == occurrence.not_before
    assert support.work(clock) == 0  # not due yet
    clock.set(occurrence.not_before + timedelta(seconds=1))
    support.work(clock)
    occurrence.refresh_from_db()
    assert occurrence.state == OccurrenceState.SUCCEEDED
    assert occurrence.attempts == 2
    assert [run["attempt"] for run in support.RUNS] == [1, 2]
    assert {run["key"] for run in support.RUNS} == {occurrence.idempotency_key}


def test_a_permanent_error_is_a_dead_letter_at_once(clock: FakeClock) -> None:
    schedule = support.schedule(clock, task=support.REFUSES, max_attempts=5)
    clock.advance(1)
    support.loop(clock).ticker.tick()
    support.work(clock)
    [occurrence] = rows(schedule)
    assert (occurrence.state, occurrence.reason) == (OccurrenceState.FAILED, "permanent_error")
    assert "bad input" in occurrence.last_error


def test_retries_used_up_end_failed(clock: FakeClock) -> None:
    schedule = support.schedule(clock, task=support.FLAKY, max_attempts=1)
    support.FAIL_TIMES["left"] = 5
    clock.advance(1)
    support.loop(clock).ticker.tick()
    support.work(clock)
    [occurrence] = rows(schedule)
    assert (occurrence.state, occurrence.reason) == (OccurrenceState.FAILED, "retries_exhausted")


def test_past_its_deadline_it_expires_instead_of_running(clock: FakeClock) -> None:
    schedule = support.schedule(clock, deadline=30)
    clock.advance(1)
    support.loop(clock).ticker.tick()
    clock.advance(45)  # the worker was busy: past the deadline when it starts
    support.work(clock)
    assert support.RUNS == []
    [occurrence] = rows(schedule)
    assert occurrence.state == OccurrenceState.EXPIRED


def test_a_kill_switch_stops_a_handed_off_job(clock: FakeClock) -> None:
    schedule = support.schedule(clock)
    clock.advance(1)
    support.loop(clock).ticker.tick()
    set_kill_switch("global", enabled=True, reason="incident", now=clock.now(), by="ops")
    support.work(clock)
    assert support.RUNS == []
    assert rows(schedule)[0].state == OccurrenceState.SKIPPED


def test_a_killed_worker_is_reconciled_and_handed_off_again(clock: FakeClock) -> None:
    schedule = support.schedule(clock, rule="3600", max_attempts=2)
    clock.advance(1)
    support.loop(clock).ticker.tick()
    [occurrence] = rows(schedule)
    [job] = support.jobs()
    # db_worker killed mid-task: its row stays RUNNING, the occurrence's lease runs out.
    DBTaskResult.objects.filter(pk=job.pk).update(status="RUNNING")
    Occurrence.objects.filter(pk=occurrence.pk).update(
        state=OccurrenceState.RUNNING,
        attempts=1,
        fencing_token=1,
        lease_expires_at=clock.now() + timedelta(seconds=60),
    )
    clock.advance(120)
    report = reconcile(clock.now(), retry_grace=timedelta(seconds=60))
    assert report.requeued == 1
    assert support.loop(clock).ticker.tick().published == 1
    job.refresh_from_db()
    assert (job.status, job.exception_class_path) == ("FAILED", SUPERSEDED)
    support.work(clock)
    occurrence.refresh_from_db()
    assert occurrence.state == OccurrenceState.SUCCEEDED
    assert len(support.RUNS) == 1


def test_jitter_becomes_run_after(clock: FakeClock) -> None:
    schedule = support.schedule(clock, jitter=30)
    clock.advance(1)
    support.loop(clock).ticker.tick()
    [occurrence] = rows(schedule)
    [job] = support.jobs()
    # The jitter is a whole number of seconds from the (random) schedule id: one of 0 or 1
    # second is already past at the tick (one second after the slot), so it is sent as due.
    if occurrence.not_before > clock.now():
        assert job.run_after == occurrence.not_before
    else:
        assert job.run_after.year == 9999


IMMEDIATE = {
    "default": {"BACKEND": f"{compat.framework.__name__}.backends.immediate.ImmediateBackend"}
}


@override_settings(TASKS=IMMEDIATE)
def test_the_immediate_backend_runs_the_body_in_the_tick(clock: FakeClock) -> None:
    schedule = support.schedule(clock, kwargs={"n": 3})
    clock.advance(1)
    support.loop(clock).ticker.tick()
    [occurrence] = rows(schedule)
    assert occurrence.state == OccurrenceState.SUCCEEDED
    assert occurrence.handoff_id
    assert support.RUNS[0]["kwargs"] == {"n": 3}
    assert support.RUNS[0]["key"] == occurrence.idempotency_key


def test_the_occurrence_page_links_the_job_row(clock: FakeClock, admin_client: Client) -> None:
    schedule = support.schedule(clock)
    clock.advance(1)
    support.loop(clock).ticker.tick()
    support.work(clock)
    [occurrence] = rows(schedule)
    page = admin_client.get(
        reverse("admin:scheduler_app_occurrence_change", args=[occurrence.pk])
    ).content.decode()
    job_url = reverse(
        "admin:django_tasks_database_dbtaskresult_change", args=[occurrence.handoff_id]
    )
    assert f'href="{job_url}"' in page
    assert f"{occurrence.handoff_id} (SUCCESSFUL)" in page


def test_the_owner_is_checked_when_the_job_starts(clock: FakeClock) -> None:
    ann = User.objects.create_user("ann", is_staff=True)
    ann.user_permissions.add(Permission.objects.get(codename="run_schedule"))
    schedule = support.schedule(clock, owner=User.objects.get(pk=ann.pk))
    clock.advance(1)
    support.loop(clock).ticker.tick()
    ann.user_permissions.clear()  # the right is taken away after the handoff
    support.work(clock)
    assert support.RUNS == []
    [occurrence] = rows(schedule)
    assert (occurrence.state, occurrence.reason) == (OccurrenceState.FAILED, "forbidden")


def test_a_buffered_slot_is_released_when_the_run_ends(clock: FakeClock) -> None:
    schedule = support.schedule(clock, overlap_policy="buffer_one")
    clock.advance(1)
    loop = support.loop(clock)
    loop.ticker.tick()
    clock.advance(60)
    loop.ticker.tick()  # the first run has not ended: the next slot waits
    first, second = rows(schedule)
    assert second.state == OccurrenceState.BUFFERED
    assert support.work(clock) == 1
    second.refresh_from_db()
    assert second.state == OccurrenceState.PENDING  # released by the first run's end
    loop.ticker.tick()
    support.work(clock)
    assert [row.state for row in rows(schedule)] == [OccurrenceState.SUCCEEDED] * 2
    assert [run["occurrence_id"] for run in support.RUNS] == [str(first.pk), str(second.pk)]


def test_a_job_the_backend_refuses_is_parked_and_the_batch_goes_on(clock: FakeClock) -> None:
    refused = support.schedule(clock, options={"priority": 200})  # django.tasks: -100..100
    fine = support.schedule(clock, options={"queue": "default", "priority": 5})
    clock.advance(1)
    assert support.loop(clock).ticker.tick().published == 1
    [parked] = rows(refused)
    assert (parked.state, parked.reason) == (OccurrenceState.FAILED, "unpublishable")
    assert "priority" in parked.last_error.lower()
    [job] = support.jobs()
    assert (job.priority, str(job.id)) == (5, rows(fine)[0].handoff_id)
