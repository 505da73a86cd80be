"""A beat outage, simulated on a fake clock: the real ``Ticker`` and a worker whose runs take a
fixed time, driven event by event (each beat tick when the previous tick said to wake, each run
when it ends).

The beat runs normally for a few slots, stops for ``outage`` seconds (the worker keeps going:
only the beat was down), comes back as a new process and runs until the backlog has drained and
a few more slots have passed. The worker takes every published message at once (as many
processes as needed) and records ``run`` seconds after claiming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from scheduler_app.clock import FakeClock
from scheduler_app.models import Occurrence, Schedule
from scheduler_app.ticker import Ticker
from scheduler_app.worker import claiming, lifecycle
from tests.integration.support import START, MemoryPublisher, schedule, ticker

LEASE = timedelta(hours=1)
MIN_SLEEP = timedelta(milliseconds=1)
"""A tick that asks to sleep 0 s is retried 1 ms later on the fake clock (no busy loop)."""


@dataclass
class Worker:
    """Claims each published message when it sees it; each run ends ``run`` later."""

    broker: MemoryPublisher
    run: timedelta
    seen: int = 0
    running: dict[str, tuple[int, datetime]] = field(default_factory=dict)

    def take(self, now: datetime) -> None:
        for row in self.broker.sent[self.seen :]:
            claim = claiming.claim(row.pk, owner="w", now=now, lease=LEASE)
            if claim.claimed:
                self.running[str(row.pk)] = (claim.token, now + self.run)
        self.seen = len(self.broker.sent)

    def next_end(self) -> datetime | None:
        return min((ends for _, ends in self.running.values()), default=None)

    def finish(self, now: datetime) -> None:
        for occurrence_id, (token, ends) in sorted(self.running.items(), key=lambda i: i[1][1]):
            if ends <= now:
                del self.running[occurrence_id]
                lifecycle.finish(occurrence_id, token=token, state="succeeded", reason="", now=now)

    def idle_until(self, clock: FakeClock, until: datetime) -> None:
        """The beat is down: runs end at their time, nothing new is published."""
        while (ends := self.next_end()) is not None and ends <= until:
            clock.set(ends)
            self.finish(ends)
        clock.set(until)


@dataclass
class Outage:
    target: Schedule
    stopped_at: datetime
    restarted_at: datetime
    ended_at: datetime
    ticks_after: int
    """Ticks of the restarted beat."""

    def rows(self) -> list[Occurrence]:
        return list(Occurrence.objects.filter(schedule=self.target).order_by("scheduled_for"))

    def backlog(self) -> list[Occurrence]:
        """The rows the restarted beat made for slots up to its restart."""
        return [
            row
            for row in self.rows()
            if self.stopped_at < row.scheduled_for <= self.restarted_at and row.state != "skipped"
        ]

    def drained_at(self) -> datetime | None:
        """When the last run of the backlog ended (None: one has not ended)."""
        ends = [row.finished_at for row in self.backlog()]
        if any(end is None for end in ends):
            return None
        return max((end for end in ends if end is not None), default=self.restarted_at)


def run_beat(beat: Ticker, worker: Worker, clock: FakeClock, until: datetime) -> int:
    """Tick and work from ``clock.now()`` until ``until``; the number of ticks."""
    ticks = 0
    wake = clock.now()
    while True:
        ends = worker.next_end()
        now = min(wake, ends) if ends is not None else wake
        if now > until:
            return ticks
        clock.set(now)
        worker.finish(now)
        if now >= wake:
            sleep = timedelta(seconds=beat.tick().sleep)
            ticks += 1
            worker.take(now)
            wake = now + max(sleep, MIN_SLEEP)


def simulate(
    *,
    interval: int,
    outage: float,
    run: float,
    overlap: str = "skip",
    misfire: str = "catch_up",
    slots_before: int = 3,
    after: float | None = None,
) -> Outage:
    """An every-``interval``-seconds schedule (default policies unless told) whose beat stops
    ``outage`` seconds after its ``slots_before``-th slot; ``after``: how long the restarted
    beat runs (default: long enough for the backlog at one run per 5 s tick, plus 3 slots)."""
    clock, broker = FakeClock(START), MemoryPublisher()
    target = schedule(
        clock,
        kind="interval",
        rule=f"{interval}s",
        overlap_policy=overlap,
        misfire_policy=misfire,
    )
    assert target.next_run_at is not None
    worker = Worker(broker, timedelta(seconds=run))
    stopped_at = target.next_run_at + timedelta(seconds=interval * (slots_before - 1) + 0.5)
    first = ticker(broker, clock, owner="beat-1")
    run_beat(first, worker, clock, stopped_at)
    first.release_lease()  # stopped: the SQLite lease is free for the restarted beat
    restarted_at = stopped_at + timedelta(seconds=outage)
    worker.idle_until(clock, restarted_at)
    if after is None:
        after = (outage / interval + 2) * (5 + run) + 3 * interval
    ended_at = restarted_at + timedelta(seconds=after)
    ticks = run_beat(ticker(broker, clock, owner="beat-2"), worker, clock, ended_at)
    return Outage(target, stopped_at, restarted_at, ended_at, ticks)
