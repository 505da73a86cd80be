"""Each schedule's latest success lives on its row (``last_success_at``), written with the
outcome on every worker path; the latest occurrence is found from the recent partitions,
with the whole ledger as the fallback (``models.latest``)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from scheduler_app.clock import FakeClock
from scheduler_app.models import Occurrence, OccurrenceState, Schedule, Trigger
from scheduler_app.models.latest import RECENT, decoded, latest
from scheduler_app.monitoring.monitor import run_monitor
from scheduler_app.worker import claiming, lifecycle
from tests.integration.support import START, MemoryPublisher, reload, rows, schedule, ticker

MINUTE = timedelta(minutes=1)
LEASE = timedelta(minutes=5)


def claimed(target: Schedule, clock: FakeClock) -> claiming.Claim:
    """The schedule's next due occurrence, claimed as a worker does."""
    ticker(MemoryPublisher(), clock).tick()
    occurrence = [row for row in rows(target) if row.state in ("pending", "dispatched")][-1]
    claim = claiming.claim(
        occurrence.pk, owner="w1", now=clock.now(), lease=LEASE, task=target.task
    )
    assert claim.claimed and claim.occurrence is not None, claim.reason
    return claim


def end(claim: claiming.Claim, state: str, at: object) -> bool:
    assert claim.occurrence is not None
    return lifecycle.finish(
        claim.occurrence.pk,
        token=claim.token,
        state=state,
        reason="" if state == "succeeded" else "error",
        now=at,  # type: ignore[arg-type]
        error="" if state == "succeeded" else "RuntimeError: boom",
        claimed=claim.occurrence,
    )


@pytest.mark.django_db
@pytest.mark.parametrize("overlap", ["allow", "buffer_one"])
def test_a_success_moves_last_success_at_and_a_failure_does_not(overlap: str) -> None:
    """``allow``: the one-statement outcome on PostgreSQL (the ORM path on SQLite);
    ``buffer_one``: the ORM path (``lifecycle.end``) on both."""
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60", overlap_policy=overlap)
    assert target.last_success_at is None
    clock.advance(MINUTE)
    first = claimed(target, clock)
    assert end(first, OccurrenceState.SUCCEEDED, clock.now() + timedelta(seconds=5))
    assert reload(target).last_success_at == clock.now() + timedelta(seconds=5)
    clock.advance(MINUTE)
    second = claimed(target, clock)
    assert end(second, OccurrenceState.FAILED, clock.now() + timedelta(seconds=5))
    assert reload(target).last_success_at == clock.now() - MINUTE + timedelta(seconds=5)


@pytest.mark.django_db
def test_last_success_at_never_moves_back() -> None:
    """A success recorded late (a worker's clock behind another's) keeps the later one."""
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60")
    clock.advance(MINUTE)
    claim = claimed(target, clock)
    later = clock.now() + timedelta(hours=1)
    Schedule.objects.filter(pk=target.pk).update(last_success_at=later)
    assert end(claim, OccurrenceState.SUCCEEDED, clock.now() + timedelta(seconds=5))
    assert reload(target).last_success_at == later


@pytest.mark.django_db
def test_the_monitor_reads_the_success_on_the_row_not_the_ledger() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="3600", expected_every=3600)
    clock.advance(timedelta(hours=1))
    claim = claimed(target, clock)
    assert end(claim, OccurrenceState.SUCCEEDED, clock.now() + MINUTE)
    assert run_monitor(clock.now() + 2 * MINUTE).ok
    # The row is the source: without it, the same ledger means no success yet.
    Schedule.objects.filter(pk=target.pk).update(last_success_at=None)
    [problem] = run_monitor(clock.now() + 2 * MINUTE).problems
    assert "no successful run yet" in problem.message
    assert "last attempt 2026-01-05 01:00 UTC succeeded" in problem.message


@pytest.mark.django_db
def test_latest_falls_back_to_the_whole_ledger() -> None:
    """A schedule whose newest row is older than ``recent`` still gets it: the unbounded
    search runs then; a newer row is found by the bounded one; none is NULL."""
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60")
    clock.advance(MINUTE)
    ticker(MemoryPublisher(), clock).tick()
    row = rows(target)[-1]
    old = row.scheduled_for

    def found(recent: datetime, fields: tuple[str, ...], **filters: object) -> dict:
        annotated = Schedule.objects.filter(pk=target.pk).annotate(
            last=latest(fields, recent=recent, **filters)
        )
        return decoded(annotated.get().last)

    later = START + timedelta(days=400)
    assert found(later - RECENT, ("scheduled_for", "state")) == {
        "scheduled_for": old,
        "state": row.state,
    }
    assert found(old - RECENT, ("scheduled_for",)) == {"scheduled_for": old}
    assert found(later, ("state",), state=OccurrenceState.SUCCEEDED) == {}


@pytest.mark.django_db
def test_a_manual_run_after_the_last_slot_is_the_latest() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60")
    clock.advance(MINUTE)
    ticker(MemoryPublisher(), clock).tick()
    rule_row = rows(target)[-1]
    manual = Occurrence.objects.get(pk=rule_row.pk)
    manual.pk = None
    manual.id = None
    manual.trigger = Trigger.MANUAL
    manual.scheduled_for = rule_row.scheduled_for + timedelta(seconds=30)
    manual.idempotency_key = f"{rule_row.idempotency_key}-manual"
    manual.state = OccurrenceState.FAILED
    manual.save(force_insert=True)
    annotated = Schedule.objects.filter(pk=target.pk).annotate(
        last=latest(("scheduled_for", "state"), recent=START - RECENT)
    )
    assert decoded(annotated.get().last) == {
        "scheduled_for": manual.scheduled_for,
        "state": "failed",
    }


def migrate(target: list[tuple[str, str]] | None) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target or executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_migration_0015_fills_last_success_at_from_the_ledger() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60")
    never = schedule(clock, kind="interval", rule="60", name="never")
    clock.advance(timedelta(minutes=3))
    ticker(MemoryPublisher(), clock).tick()
    first, second, third = rows(target)[-3:]
    Occurrence.objects.filter(pk=first.pk).update(state="succeeded", finished_at=START)
    Occurrence.objects.filter(pk=second.pk).update(
        state="succeeded", finished_at=START + timedelta(minutes=2)
    )
    Occurrence.objects.filter(pk=third.pk).update(state="failed", finished_at=clock.now())
    try:
        migrate([("scheduler_app", "0014_partition_ledger")])
        migrate([("scheduler_app", "0015_schedule_last_success")])
        stored = dict(Schedule.objects.values_list("pk", "last_success_at"))
        assert stored[target.pk] == START + timedelta(minutes=2)
        assert stored[never.pk] is None
    finally:
        migrate(None)
