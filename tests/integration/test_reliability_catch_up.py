"""After a short beat outage, the default policies (misfire ``catch_up``, overlap ``skip``) run
every missed slot within 24 h (at most 12, oldest first), then run on time, and never skip an
on-time slot as overlap because of the schedule's own catch-up backlog.

A simulated second-by-second timeline: a beat ticking every 5 s (its default maximum sleep)
and one worker whose runs take ``RUN`` seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest

from scheduler_app.clock import FakeClock
from scheduler_app.models import Occurrence, OccurrenceState, Schedule, Trigger
from scheduler_app.policies.overlap import decide_overlap
from scheduler_app.worker import claiming, lifecycle
from tests.integration.support import START, MemoryPublisher, schedule, ticker

pytestmark = pytest.mark.django_db
RUN = timedelta(seconds=2)
LEASE = timedelta(seconds=60)


@dataclass
class Worker:
    """Takes published messages in order, one at a time; each run lasts ``RUN``."""

    broker: MemoryPublisher
    seen: int = 0
    queue: list[str] = field(default_factory=list)
    running: tuple[str, int, datetime] | None = None

    def step(self, now: datetime) -> None:
        self.queue.extend(str(row.pk) for row in self.broker.sent[self.seen :])
        self.seen = len(self.broker.sent)
        if self.running is not None and now >= self.running[2]:
            occurrence_id, token, _ = self.running
            lifecycle.finish(occurrence_id, token=token, state="succeeded", reason="", now=now)
            self.running = None
        while self.running is None and self.queue:
            claim = claiming.claim(self.queue.pop(0), owner="w", now=now, lease=LEASE)
            if claim.claimed:
                self.running = (str(claim.occurrence.pk), claim.token, now + RUN)  # type: ignore[union-attr]


def simulate(outage: timedelta, after: timedelta) -> tuple[Schedule, FakeClock]:
    clock, broker = FakeClock(START), MemoryPublisher()
    target = schedule(clock, kind="cron", rule="* * * * *", overlap_policy="skip")
    assert (target.misfire_policy, target.catch_up_window, target.catch_up_limit) == (
        "catch_up",
        86400,
        12,
    )
    beat, worker = ticker(broker, clock), Worker(broker)
    end = START + timedelta(minutes=3)
    for second in range(int((end - START).total_seconds())):  # running normally
        clock.set(START + timedelta(seconds=second))
        if second % 5 == 0:
            beat.tick()
        worker.step(clock.now())
    clock.set(end + outage)  # the beat was down; the worker idled
    for second in range(int(after.total_seconds())):
        clock.set(end + outage + timedelta(seconds=second))
        if second % 5 == 0:
            beat.tick()
        worker.step(clock.now())
    return target, clock


def by_slot(target: Schedule) -> dict[datetime, Occurrence]:
    return {row.scheduled_for: row for row in Occurrence.objects.filter(schedule=target)}


@pytest.mark.parametrize("outage_minutes", [2, 5, 15])
def test_a_short_outage_is_caught_up_then_runs_on_time(outage_minutes: int) -> None:
    outage = timedelta(minutes=outage_minutes)
    target, clock = simulate(outage, after=timedelta(minutes=6))
    rows = by_slot(target)
    assert not [row for row in rows.values() if row.reason == "overlap"]
    restart = START + timedelta(minutes=3) + outage
    missed = sorted(slot for slot in rows if START + timedelta(minutes=3) < slot < restart)
    # The most recent missed slot is still on time (max_lateness 60 s); the others, at most
    # the 12 most recent, are caught up.
    assert len(missed) == min(outage_minutes - 1, 12) + 1
    assert [rows[slot].trigger for slot in missed] == [Trigger.CATCH_UP] * (len(missed) - 1) + [
        Trigger.SCHEDULED
    ]
    # Every slot that has a row ran, oldest first, and the slots after the drain ran on time.
    done = [row for row in rows.values() if row.scheduled_for < clock.now() - RUN * 3]
    assert all(row.state == OccurrenceState.SUCCEEDED for row in done)
    starts = [rows[slot].started_at for slot in sorted(rows) if rows[slot].started_at]
    assert starts == sorted(starts)
    last_slot = max(slot for slot in rows if slot <= clock.now() - timedelta(seconds=10))
    started = rows[last_slot].started_at
    assert started is not None and started - last_slot <= timedelta(seconds=5)


def test_a_long_outage_catches_up_the_12_most_recent_slots() -> None:
    target, _ = simulate(timedelta(hours=3), after=timedelta(minutes=3))
    stored = Schedule.objects.get(pk=target.pk)
    caught_up = Occurrence.objects.filter(schedule=target, trigger=Trigger.CATCH_UP).count()
    assert caught_up == 12
    assert stored.skipped_count >= 3 * 60 - 12 - 1  # the older missed slots: counted, not run


def test_skip_still_skips_a_slot_that_overlaps_a_long_run() -> None:
    # Not catching up: a run that overran its interval makes the next slot skip.
    assert decide_overlap("skip", active=1, buffered=0, new=1).states == ("skipped",)
    # Catching up: the on-time slot waits; a new catch-up slot next to an open run skips.
    catching = decide_overlap("skip", active=1, buffered=3, new=2, catching_up=True, new_catch_up=1)
    assert catching.states == ("skipped", "buffered")
