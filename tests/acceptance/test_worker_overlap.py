"""Overlap policies end to end: runs longer than the interval, on a real worker.

One schedule per policy, all at once on one worker with enough threads: every 1 s for three
slots, the task takes 3 s. Expected (docs/tasks.md, the issue's "Overlap policies"):

- ``allow``: three runs, concurrently;
- ``skip``: the first runs, the two later slots are ``skipped: overlap``;
- ``buffer_one``: the second waits and runs after the first; the third is skipped;
- ``buffer_all``: all three run, one after another, in slot order;
- ``cancel_previous``: each new slot asks the running one to stop (it does, through
  ``check_cancelled()``) and starts when it has; the last one runs to the end. A cancelled
  (and revoked) one runs again when replayed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from scheduler_app import services
from scheduler_app.models import Occurrence, OccurrenceState, Schedule, ScheduleStatus
from tests.acceptance.e2e import Beat, Probe, Workers, next_second, state_of, states, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

RUN = 3.0
SLOTS = 3
OK = ("succeeded", "")  # a success has no reason (a released one loses "released")
FINAL = {
    "allow": [OK, OK, OK],
    "skip": [OK, ("skipped", "overlap"), ("skipped", "overlap")],
    "buffer_one": [OK, OK, ("skipped", "overlap")],
    "buffer_all": [OK, OK, OK],
    "cancel_previous": [
        ("cancelled", "cancel_requested"),
        ("cancelled", "cancel_requested"),
        OK,
    ],
}
OPEN = (
    OccurrenceState.PENDING,
    OccurrenceState.DISPATCHED,
    OccurrenceState.RUNNING,
    OccurrenceState.RETRYING,
    OccurrenceState.BUFFERED,
)


def overlapping(runs: list[dict[str, Any]]) -> bool:
    spans = sorted((run["start"], run["end"]) for run in runs)
    return any(later[0] < earlier[1] for earlier, later in itertools.pairwise(spans))


def test_each_overlap_policy_with_runs_longer_than_the_interval(
    workers: Workers, beat: Beat, probe: Callable[[], Probe]
) -> None:
    workers.start(concurrency=8)
    anchor = next_second()
    probes: dict[str, Probe] = {}
    schedules: dict[str, Schedule] = {}
    for policy in FINAL:
        probes[policy] = probe()
        schedules[policy] = services.create_schedule(
            name=f"overlap {policy}",
            task="e2e.sleep",
            kind="interval",
            rule="1s",
            anchor=anchor,
            max_count=SLOTS,
            overlap_policy=policy,
            kwargs=probes[policy].kwargs(seconds=RUN, cooperative=policy == "cancel_previous"),
        )

    def settled() -> bool:
        done = Schedule.objects.filter(
            pk__in=[s.pk for s in schedules.values()], status=ScheduleStatus.COMPLETED
        ).count() == len(schedules)
        return (
            done
            and not Occurrence.objects.filter(
                schedule__in=schedules.values(), state__in=OPEN
            ).exists()
        )

    wait_for(settled, "every policy's occurrences to end", workers, beat=beat)

    seen = {policy: states(schedule.pk) for policy, schedule in schedules.items()}
    expected = {policy: list(final) for policy, final in FINAL.items()}
    if seen["cancel_previous"][1] == ("cancelled", "superseded"):
        # A slow machine: the first run had not stopped yet when the third slot came, so the
        # waiting second one gave way to the newer one without running. Also correct.
        expected["cancel_previous"][1] = ("cancelled", "superseded")
    assert seen == expected

    runs = {policy: probes[policy].runs() for policy in FINAL}
    # Executions match the states: skipped and superseded slots never reached the task.
    assert {policy: len(r) for policy, r in runs.items()} == {
        policy: sum(state != "skipped" and reason != "superseded" for state, reason in final)
        for policy, final in expected.items()
    }
    # allow runs concurrently; every other policy never runs two at once.
    assert overlapping(runs["allow"])
    for policy in ("skip", "buffer_one", "buffer_all", "cancel_previous"):
        assert not overlapping(runs[policy]), policy
    # Buffered occurrences run in slot order, each after the previous one ended.
    for policy in ("buffer_one", "buffer_all"):
        slots = [run["scheduled_for"] for run in sorted(runs[policy], key=lambda r: r["start"])]
        assert slots == sorted(slots), policy
    # cancel_previous: the first two stopped early (cooperatively), the last ran in full.
    in_order = sorted(runs["cancel_previous"], key=lambda r: r["start"])
    assert [run["outcome"] for run in in_order] == ["cancelled"] * (len(in_order) - 1) + ["done"]
    stopped = in_order[:-1]
    assert all(run["end"] - run["start"] < RUN for run in stopped)
    # Every run was a first attempt of its own occurrence, with its own key.
    for policy, policy_runs in runs.items():
        assert all(run["attempt"] == 1 for run in policy_runs), policy
        keys = [run["idempotency_key"] for run in policy_runs]
        assert len(set(keys)) == len(keys), policy

    # The first cancel_previous run was revoked as well (the worker remembers revoked ids for
    # hours); replayed, the same task id must run again, not be dropped as revoked.
    first = Occurrence.objects.filter(schedule=schedules["cancel_previous"]).earliest(
        "scheduled_for"
    )
    assert f"Tasks flagged as revoked: {first.pk}" in workers.logs()
    services.replay_occurrence(first.pk)
    wait_for(
        lambda: state_of(first.pk) not in OPEN, "the replayed occurrence to end", workers, beat=beat
    )
    first.refresh_from_db()
    assert (first.state, first.attempts) == (OccurrenceState.SUCCEEDED, 2)
    replayed = [run for run in probes["cancel_previous"].runs() if run["attempt"] == 2]
    assert [(run["occurrence_id"], run["outcome"]) for run in replayed] == [(str(first.pk), "done")]
