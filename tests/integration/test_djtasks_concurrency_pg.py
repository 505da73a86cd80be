"""Several ``run_scheduler`` tickers racing on PostgreSQL over the django.tasks target: each
slot becomes one occurrence, each occurrence one django-tasks-db job, each job's body runs once.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from scheduler_app.clock import FakeClock
from scheduler_app.conf import SchedulerSettings
from scheduler_app.djtasks.publisher import DjangoTasksPublisher
from scheduler_app.handoff.router import TargetRouter
from scheduler_app.models import HandoffTarget, Occurrence, OccurrenceState
from scheduler_app.ticker import Ticker
from tests.integration import djtasks_support as support
from tests.integration.test_concurrency_pg import tick_concurrently

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
SCHEDULES = 60
ROUNDS = [T0 + timedelta(minutes=minute) for minute in range(5)]


def test_racing_run_schedulers_hand_each_slot_off_once() -> None:
    support.reset()
    clock = FakeClock(T0 - timedelta(seconds=1))
    for n in range(SCHEDULES):
        support.schedule(clock, rule="60", key=f"race-{n}", overlap_policy="allow")
    settings = SchedulerSettings(BATCH_SIZE=10, PUBLISH_LEASE=3600)
    tickers = [
        Ticker(
            TargetRouter({HandoffTarget.DJANGO_TASKS: DjangoTasksPublisher(clock)}),
            clock=clock,
            settings=settings,
            owner=f"run-scheduler-{n}",
        )
        for n in range(3)
    ]
    assert not tickers[0].needs_lease
    for now in ROUNDS:
        clock.set(now)
        tick_concurrently(tickers)
    occurrences = list(Occurrence.objects.values_list("schedule_id", "scheduled_for", "handoff_id"))
    assert len(occurrences) == SCHEDULES * len(ROUNDS)
    assert len({(s, slot) for s, slot, _ in occurrences}) == len(occurrences)
    jobs = support.jobs()
    assert len(jobs) == len(occurrences)  # one job per occurrence, none twice
    assert {str(job.id) for job in jobs} == {handoff for *_, handoff in occurrences}
    support.work(clock)
    assert Counter(run["occurrence_id"] for run in support.RUNS).most_common(1)[0][1] == 1
    assert len(support.RUNS) == len(occurrences)
    states = set(Occurrence.objects.values_list("state", flat=True))
    assert states == {OccurrenceState.SUCCEEDED}
