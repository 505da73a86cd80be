"""Overlap policies with a fake clock and a ticker: a run that outlasts the interval.

An every-minute schedule's first occurrence is claimed and left ``running`` while the next
slots come due; each policy decides what the new occurrences become, and ending the running
one releases the next buffered one in the same transaction.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import pytest
from django.db import connection

from scheduler_app.clock import FakeClock
from scheduler_app.dispatch.reconcile import reconcile
from scheduler_app.models import ACTIVE_STATES, Occurrence, OccurrenceState, Schedule
from scheduler_app.ticker import Ticker
from scheduler_app.worker import claiming, lifecycle
from tests.integration.support import START, MemoryPublisher, rows, schedule, ticker
from tests.integration.worker_support import asked_to_stop_midway, cancellable, due_one, fetch, run

pytestmark = pytest.mark.django_db
MINUTE = timedelta(minutes=1)
LEASE = timedelta(hours=1)  # longer than any test: only the policy ends a run here
R, D, B, P = "running", "dispatched", "buffered", "pending"
SKIPPED = ("skipped", "overlap")


class RevokingPublisher(MemoryPublisher):
    """Also records ``revoke`` calls, like ``CeleryPublisher.revoke``."""

    def __init__(self) -> None:
        super().__init__()
        self.revoked: list[list[str]] = []

    def revoke(self, occurrence_ids: list[str]) -> None:
        self.revoked.append(sorted(occurrence_ids))


@dataclass
class Scene:
    clock: FakeClock
    broker: RevokingPublisher
    beat: Ticker
    target: Schedule

    def next_slot(self) -> None:
        self.clock.advance(MINUTE)
        self.beat.tick()

    def states(self) -> list[object]:
        return [
            row.state if row.state != "skipped" else (row.state, row.reason)
            for row in rows(self.target)
        ]

    def occurrence(self, index: int) -> Occurrence:
        return fetch(rows(self.target)[index])

    def claim(self, index: int) -> claiming.Claim:
        occurrence = self.occurrence(index)
        claim = claiming.claim(occurrence.pk, owner="w", now=self.clock.now(), lease=LEASE)
        assert claim.claimed, claim.reason
        return claim

    def finish(self, claim: claiming.Claim, state: str = OccurrenceState.SUCCEEDED) -> None:
        assert claim.occurrence is not None
        now = self.clock.now()
        assert lifecycle.finish(
            claim.occurrence.pk, token=claim.token, state=state, reason="", now=now
        )


def scene(
    policy: str, *, claim_first: bool = True, **fields: object
) -> tuple[Scene, claiming.Claim | None]:
    clock, broker = FakeClock(START), RevokingPublisher()
    target = schedule(clock, kind="interval", rule="60s", overlap_policy=policy, **fields)
    assert target.next_run_at is not None
    clock.set(target.next_run_at)
    current = Scene(clock, broker, ticker(broker, clock), target)
    current.beat.tick()
    return current, current.claim(0) if claim_first else None


def test_skip_records_overlapping_slots_as_skipped() -> None:
    s, first = scene("skip")
    s.next_slot()
    s.next_slot()
    assert s.states() == [R, SKIPPED, SKIPPED]
    assert first is not None
    s.finish(first)
    s.next_slot()
    assert s.states() == ["succeeded", SKIPPED, SKIPPED, D]


def test_buffer_one_keeps_the_first_waiting_one() -> None:
    s, first = scene("buffer_one")
    s.next_slot()
    s.next_slot()
    assert s.states() == [R, B, SKIPPED]
    assert first is not None
    s.finish(first)
    assert s.states() == ["succeeded", P, SKIPPED]
    assert s.occurrence(1).reason == "released"
    s.beat.tick()  # published at once, not at the next slot
    assert s.states() == ["succeeded", D, SKIPPED]
    assert s.broker.ids[-1] == str(s.occurrence(1).pk)


def test_buffer_all_runs_every_slot_in_order() -> None:
    s, first = scene("buffer_all")
    for _ in range(3):
        s.next_slot()
    assert s.states() == [R, B, B, B]
    claim = first
    for index in (1, 2, 3):
        assert claim is not None
        s.finish(claim)
        expected = ["succeeded"] * index + [P] + [B] * (3 - index)
        assert s.states() == expected
        s.beat.tick()
        claim = s.claim(index)
    assert s.broker.ids == [str(row.pk) for row in rows(s.target)]  # slot order


def test_the_reconciler_releases_a_queue_whose_release_never_committed() -> None:
    # The worker ends a run in one statement and releases the next buffered one in a second
    # transaction: a worker killed between the two leaves the queue with nothing active.
    s, _first = scene("buffer_all")
    s.next_slot()
    s.next_slot()
    assert s.states() == [R, B, B]
    Occurrence.objects.filter(pk=s.occurrence(0).pk).update(state=OccurrenceState.SUCCEEDED)

    report = reconcile(s.clock.now(), retry_grace=LEASE)
    assert report.released == 1
    assert s.states() == ["succeeded", P, B]
    assert s.occurrence(1).reason == "released"
    assert reconcile(s.clock.now(), retry_grace=LEASE).released == 0  # one at a time


def test_cancel_previous_asks_the_running_one_to_stop_and_supersedes(
    django_capture_on_commit_callbacks: Any,
) -> None:
    s, first = scene("cancel_previous")
    assert first is not None and first.occurrence is not None
    with django_capture_on_commit_callbacks(execute=True):  # revoke is sent after commit
        s.next_slot()
    asked_at = s.clock.now()
    assert s.states() == [R, B]
    assert s.occurrence(0).cancel_requested_at == asked_at
    assert s.broker.revoked == [[str(first.occurrence.pk)]]

    with django_capture_on_commit_callbacks(execute=True):
        s.next_slot()  # the newest slot wins; the older waiting one gives way
    assert s.states() == [R, ("cancelled"), B]
    assert s.occurrence(1).reason == "superseded"
    assert s.occurrence(0).cancel_requested_at == asked_at
    assert s.broker.revoked == [[str(first.occurrence.pk)]]  # asked once

    s.finish(first, OccurrenceState.CANCELLED)  # the task saw the flag and stopped
    assert s.states() == ["cancelled", "cancelled", P]


def test_cancel_previous_one_asked_before_it_started_never_starts() -> None:
    s, _ = scene("cancel_previous", claim_first=False, task="tests.cancellable")
    s.next_slot()  # the first is still dispatched: it is asked to stop before it starts
    assert s.states() == [D, B]
    result = run(cancellable, s.occurrence(0), s.clock)  # the revoke did not reach the worker
    assert result.state == "IGNORED"
    first = s.occurrence(0)
    assert (first.state, first.reason, first.attempts) == ("cancelled", "cancel_requested", 0)
    assert first.started_at is None
    assert s.states() == ["cancelled", P]
    assert run(cancellable, s.occurrence(1), s.clock).result == "done"
    assert s.states() == ["cancelled", "succeeded"]


def test_a_running_task_stops_at_check_cancelled() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, task="tests.asked_to_stop_midway")
    assert run(asked_to_stop_midway, occurrence, clock).state == "IGNORED"
    row = fetch(occurrence)
    assert (row.state, row.reason, row.attempts) == ("cancelled", "cancel_requested", 1)
    assert row.started_at == clock.now()


def test_cancel_previous_starts_the_new_one_after_the_grace() -> None:
    s, first = scene("cancel_previous", cancel_grace=30)
    s.next_slot()
    asked_at = s.clock.now()
    grace = timedelta(seconds=30)
    assert reconcile(asked_at + grace, retry_grace=LEASE).released == 0
    report = reconcile(asked_at + grace + timedelta(seconds=1), retry_grace=LEASE)
    assert report.released == 1
    assert s.states() == [R, P]  # the old one never stopped; the new one starts anyway
    assert s.occurrence(1).reason == "released_after_grace"

    # The next slot asks the released one to stop; it gets its own full grace period,
    # whatever the older (still running) one's grace says.
    s.beat.tick()
    second = s.claim(1)
    s.next_slot()
    asked_again = s.clock.now()
    assert s.states() == [R, R, B]
    assert reconcile(asked_again + timedelta(seconds=5), retry_grace=LEASE).released == 0
    assert s.states() == [R, R, B]
    assert reconcile(asked_again + grace + timedelta(seconds=1), retry_grace=LEASE).released == 1
    assert s.states() == [R, R, P]
    assert first is not None and second.claimed


def test_allow_runs_concurrently() -> None:
    s, _ = scene("allow")
    s.next_slot()
    s.next_slot()
    assert s.states() == [R, D, D]
    s.claim(1)
    s.claim(2)
    assert s.states() == [R, R, R]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("allow", [D, D, D]),
        ("skip", [D, B, B]),
        ("buffer_one", [D, B, SKIPPED]),
        ("buffer_all", [D, B, B]),
        ("cancel_previous", [D, B, B]),
    ],
)
def test_a_catch_up_batch_on_an_idle_schedule_runs_one_after_another(
    policy: str, expected: list[object]
) -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60s", overlap_policy=policy)
    assert target.next_run_at is not None
    clock.set(target.next_run_at + 2 * MINUTE + timedelta(seconds=10))
    ticker(RevokingPublisher(), clock).tick()
    current = Scene(clock, RevokingPublisher(), ticker(MemoryPublisher(), clock), target)
    assert current.states() == expected


def _tick(name: str, now: datetime) -> None:
    ticker(MemoryPublisher(), FakeClock(now), owner=name).tick()


def _work(targets: list[Schedule], now: datetime) -> None:
    """A worker: claims every active occurrence; those of even schedules also finish."""
    for index, target in enumerate(targets):
        for row in Occurrence.objects.filter(schedule=target, state__in=ACTIVE_STATES):
            claim = claiming.claim(row.pk, owner="w", now=now, lease=LEASE)
            if index % 2 == 0 and claim.claimed:
                lifecycle.finish(row.pk, token=claim.token, state="succeeded", reason="", now=now)


def _all_at_once(actions: list[Callable[[], None]]) -> None:
    """Run ``actions`` in threads released together, each on its own connection."""
    gate = threading.Barrier(len(actions))
    errors: list[BaseException] = []

    def guarded(action: Callable[[], None]) -> None:
        try:
            gate.wait(timeout=30)
            action()
        except BaseException as exc:  # re-raised by the caller's assertion
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=guarded, args=(action,)) for action in actions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("policy", ["skip", "buffer_one", "buffer_all", "cancel_previous"])
def test_concurrent_tickers_and_workers_never_both_see_nothing_running(policy: str) -> None:
    """Three tickers and a worker thread act at the same instants on the same schedules; at
    every quiet point each schedule has at most one active occurrence and none waits idle.
    Afterwards a worker alone finishes what is active: no schedule was left wedged. (Whether
    the racing worker finished a run itself is the threads' timing: with ``cancel_previous``
    the tickers may end every run it would have claimed, as CI once saw on Python 3.13.)"""
    clock = FakeClock(START)
    targets = [
        schedule(clock, kind="interval", rule="60s", overlap_policy=policy, anchor=START)
        for _ in range(12)
    ]
    first = min(t.next_run_at for t in targets if t.next_run_at is not None)
    for round_ in range(8):
        now = first + MINUTE * round_
        beats = [partial(_tick, f"beat-{n}", now) for n in range(3)]
        _all_at_once([*beats, partial(_work, targets, now)])
        for target in targets:
            occurrences = Occurrence.objects.filter(schedule=target)
            active = occurrences.filter(state__in=ACTIVE_STATES).count()
            waiting = occurrences.filter(state=OccurrenceState.BUFFERED).count()
            assert active <= 1, (policy, round_, states_of(target))
            assert waiting == 0 or active == 1, (policy, round_, states_of(target))
    _work(targets, now)
    assert Occurrence.objects.filter(state=OccurrenceState.SUCCEEDED).exists()


def states_of(target: Schedule) -> list[tuple[str, str]]:
    return [(row.state, row.reason) for row in rows(target)]
