"""Retries, deadlines and dead letters end to end, on a real worker.

A failed attempt moves the occurrence to ``retrying`` with its next time; the beat publishes
the next attempt (same task id, same key) with that eta. Retries stop at the deadline or at
``max_attempts``; permanent errors fail at once; a replay runs a failed one again.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from scheduler_app import services
from scheduler_app.errors import ScheduleStateError
from scheduler_app.models import Occurrence, OccurrenceState, Schedule
from tests.acceptance.e2e import Beat, Probe, Workers, next_second, state_of, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

ENDED = (
    OccurrenceState.SUCCEEDED,
    OccurrenceState.FAILED,
    OccurrenceState.EXPIRED,
    OccurrenceState.CANCELLED,
)


def only_occurrence(schedule: Schedule) -> Occurrence:
    return Occurrence.objects.get(schedule=schedule)


def ended(schedule: Schedule) -> bool:
    return Occurrence.objects.filter(schedule=schedule, state__in=ENDED).exists()


def test_transient_errors_retry_until_the_deadline(
    workers: Workers, beat: Beat, probe: Callable[[], Probe]
) -> None:
    workers.start(concurrency=4)
    anchor = next_second()
    always, once, exhausted = probe(), probe(), probe()
    common: dict[str, Any] = {"task": "e2e.rate_limited", "kind": "interval", "rule": "1h"}
    common["anchor"] = anchor
    # 429 on every attempt; backoff 1 s, 2 s, 4 s (+ up to 50 % jitter) meets the 5 s deadline
    # long before the 10 attempts are used.
    past_deadline = services.create_schedule(
        **common, deadline=5, retry_delay=1, max_attempts=10, kwargs=always.kwargs()
    )
    # 429 once, then fine: the second attempt of the same occurrence succeeds.
    recovers = services.create_schedule(
        **common, deadline=30, retry_delay=1, max_attempts=10, kwargs=once.kwargs(fail_times=1)
    )
    # No deadline: retries stop when the attempts are used up.
    used_up = services.create_schedule(
        **common, retry_delay=1, max_attempts=2, kwargs=exhausted.kwargs()
    )
    schedules = (past_deadline, recovers, used_up)
    wait_for(lambda: all(ended(s) for s in schedules), "all three to end", workers, beat=beat)

    # Past the deadline: no attempt started after it, and the last failure was not retried.
    late = only_occurrence(past_deadline)
    assert late.deadline_at is not None
    assert (late.state, late.reason) in {
        (OccurrenceState.FAILED, "retry_past_deadline"),  # the next retry would be too late
        (OccurrenceState.EXPIRED, "deadline_passed"),  # a retry came due after the deadline
    }
    assert "TooManyRequests: 429" in late.last_error
    runs = always.runs()
    assert len(runs) >= 2 and len(runs) == always.executions()
    assert [run["attempt"] for run in runs] == list(range(1, len(runs) + 1))
    assert late.attempts == len(runs)
    assert {run["idempotency_key"] for run in runs} == {late.idempotency_key}
    # (The worker checks the deadline when it claims; the body starts a moment later.)
    deadline = late.deadline_at.timestamp() + 0.25
    assert all(run["start"] < deadline for run in runs)
    assert all(b["start"] > a["end"] for a, b in itertools.pairwise(runs))

    # Recovered: one occurrence, two attempts, the same key; the effect applied once.
    recovered = only_occurrence(recovers)
    assert (recovered.state, recovered.attempts) == (OccurrenceState.SUCCEEDED, 2)
    assert [(run["attempt"], run["outcome"]) for run in once.runs()] == [(1, "429"), (2, "done")]
    assert once.sink() == {recovered.idempotency_key: str(recovered.id)}

    # Attempts used up.
    dead = only_occurrence(used_up)
    assert (dead.state, dead.reason, dead.attempts) == (
        OccurrenceState.FAILED,
        "retries_exhausted",
        2,
    )
    assert exhausted.executions() == 2

    # Retries were attempts of the same occurrences, never new ones; nothing runs any more.
    beat.wait_ticks(3)
    assert Occurrence.objects.filter(schedule__in=schedules).count() == 3
    assert always.executions() == len(runs)


def test_permanent_error_fails_at_once_and_replay_reruns_with_the_same_key(
    workers: Workers, beat: Beat, probe: Callable[[], Probe]
) -> None:
    workers.start(concurrency=2)
    task = probe()
    schedule = services.create_schedule(
        task="e2e.permanent",
        kind="interval",
        rule="1h",
        anchor=next_second(),
        max_attempts=5,
        retry_delay=1,
        kwargs=task.kwargs(),
    )
    wait_for(lambda: ended(schedule), "the permanent failure", workers, beat=beat)
    failed = only_occurrence(schedule)
    assert (failed.state, failed.reason, failed.attempts) == (
        OccurrenceState.FAILED,
        "permanent_error",
        1,
    )
    assert failed.last_error.startswith("PermanentTaskError: the payload is invalid")
    beat.wait_ticks(3)  # no retry is scheduled or published
    assert task.executions() == 1
    assert state_of(failed.pk) == OccurrenceState.FAILED

    # The dead letter, fixed and replayed: the same occurrence and key, a new attempt.
    task.set_flag("fixed")
    services.replay_occurrence(failed.pk)
    wait_for(
        lambda: state_of(failed.pk) == OccurrenceState.SUCCEEDED,
        "the replay to succeed",
        workers,
        beat=beat,
    )
    replayed = only_occurrence(schedule)
    assert replayed.pk == failed.pk and replayed.attempts == 2
    runs = task.runs()
    assert [(run["attempt"], run["outcome"]) for run in runs] == [(1, "permanent"), (2, "done")]
    assert {run["idempotency_key"] for run in runs} == {failed.idempotency_key}
    assert {run["scheduled_for"] for run in runs} == {failed.scheduled_for.isoformat()}
    assert task.sink() == {failed.idempotency_key: str(failed.id)}
    with pytest.raises(ScheduleStateError, match="force"):
        services.replay_occurrence(failed.pk)  # a succeeded one needs force=True
