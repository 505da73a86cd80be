"""One scheduler tick: materialize due slots, publish the outbox, say how long to sleep.

Around the work, on their own cadences: the heartbeat (every ``SCHEDULER_HEALTH_STALE`` / 3
seconds), the expected-run monitor (``SCHEDULER_MONITOR_INTERVAL``), the clock-skew check
(at start and every ``SKEW_INTERVAL``), the ledger's partitions created ahead (PostgreSQL,
hourly), retention (``SCHEDULER_RETENTION``, daily) and the metrics endpoint
(``SCHEDULER_METRICS_PORT``). The beat class is a thin adapter around ``Ticker``; tests drive
``Ticker`` with a fake clock and a fake publisher.

Clocks: instants (slots, leases, cadences of the periodic jobs) come from ``clock``, the wall
clock that the other processes share through the database; the tick's own duration is measured
with ``monotonic``, which never steps.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, connection, transaction
from django.db.models import Q

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.conf import SchedulerSettings, get_settings
from scheduler_app.dispatch.claim import earliest_due
from scheduler_app.dispatch.materialize import materialize_batch
from scheduler_app.dispatch.outbox import dispatch_batch, hand_off, has_buffered, has_publishable
from scheduler_app.dispatch.probe import probe
from scheduler_app.dispatch.reconcile import reconcile
from scheduler_app.handoff.protocol import Publisher, served_targets
from scheduler_app.models import SchedulerLease
from scheduler_app.monitoring import metrics
from scheduler_app.monitoring.heartbeat import Heartbeat
from scheduler_app.monitoring.monitor import run_monitor
from scheduler_app.monitoring.retention import DEFAULT_BATCH, parse_age, prune
from scheduler_app.monitoring.skew import check_skew
from scheduler_app.observability import tracing
from scheduler_app.observability.beat import BeatPing
from scheduler_app.partitions.maintain import PartitionKeeper

logger = logging.getLogger("scheduler_app.ticker")
LEASE_NAME = "beat"
LOCKED_RETRY = 0.2
SKEW_INTERVAL = 300.0
"""Seconds between clock-skew checks (the first one runs on the first tick)."""
RETENTION_INTERVAL = 86400.0
RETENTION_ROWS_PER_TICK = 10 * DEFAULT_BATCH
"""Retention deletes at most this many rows per tick, so a tick stays short."""
DRAIN_POLL = 0.2
"""Seconds between ticks while occurrences wait in ``buffered`` (a backlog after downtime, or
runs queued behind one that overran): each run that ends releases the next into the outbox, and
the beat hands it off within this time instead of at its next slot, so a backlog drains as fast
as its runs end (plus at most this much per run), not one run per ``MAX_INTERVAL``."""


class Every:
    """A cadence on the wall clock that survives steps: a clock set back by an hour does not
    postpone the job by an hour (it runs, and counts from the new time)."""

    def __init__(self, seconds: float, *, at_start: bool = True) -> None:
        self.interval = timedelta(seconds=seconds)
        self.at_start = at_start
        self.next: datetime | None = None

    def due(self, now: datetime) -> bool:
        if self.next is None:
            self.next = now + self.interval
            return self.at_start
        if now >= self.next or self.next - now > self.interval:
            self.next = now + self.interval
            return True
        return False


@dataclass(frozen=True)
class TickResult:
    created: int
    published: int
    sleep: float
    leader: bool = True
    broker_failed: bool = False


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Ticker:
    """Runs ticks for one scheduler process."""

    def __init__(
        self,
        publisher: Publisher,
        *,
        clock: Clock | None = None,
        settings: SchedulerSettings | None = None,
        owner: str | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.publisher = publisher
        self.targets = served_targets(publisher)
        self.clock = clock or SystemClock()
        self.settings = settings or get_settings()
        self.owner = owner or default_owner()
        self.monotonic = monotonic
        self._reconcile = Every(self.settings.RECONCILE_INTERVAL, at_start=False)
        self.heartbeat = Heartbeat(self.settings.HEALTH_STALE / 3)
        self._monitor = Every(self.settings.MONITOR_INTERVAL)
        self._skew = Every(SKEW_INTERVAL)
        self._retention = Every(RETENTION_INTERVAL)
        self.partitions = PartitionKeeper(self.settings)
        self._pruning = False
        self._draining = True  # the first tick looks: a restarted beat may find a backlog
        self._error = ""
        self._metrics_started = False
        self.beat_ping = BeatPing(self.settings)
        self._settled = False

    def settle(self) -> None:
        """Once, when a long-running process's start-up is done (the beat and ``run_scheduler``
        after their first good tick): free the start-up's garbage, then move what is left (the
        loaded Django, Celery, the app and its tasks, which live as long as the process) out of
        the collector's reach (``gc.freeze``). Its full passes then walk only the objects made
        since, not every object the process holds: they took ~9% of a burst of 1,000 slots
        among 10,000 schedules (0.233 s -> 0.212 s, bench's burst, docs/performance.md)."""
        if self._settled:
            return
        self._settled = True
        gc.collect()
        gc.freeze()

    @property
    def needs_lease(self) -> bool:
        """Without SKIP LOCKED (SQLite) only one scheduler may work at a time."""
        return not connection.features.has_select_for_update_skip_locked

    def tick(self) -> TickResult:
        """One tick, then the periodic jobs that are due (heartbeat, monitor, skew, retention).

        Between those jobs an idle tick runs a fixed number of queries whatever the schedule
        count: [the SQLite lease] + the earliest due instant + an outbox probe."""
        started = self.monotonic()
        now = self.clock.now()
        self._serve_metrics()
        try:
            result = self._tick(now)
        except Exception as exc:
            self._error = f"{type(exc).__name__}: {exc}"  # told by the next heartbeat
            raise
        metrics.TICK_DURATION.observe(max(self.monotonic() - started, 0.0))
        metrics.TICK_BATCH.observe(result.created + result.published)
        self.maintain(now, result)
        self.beat_ping.ticked()
        return result

    def _tick(self, now: datetime) -> TickResult:
        if self.needs_lease and not self.hold_lease(now):
            return TickResult(0, 0, self.settings.MAX_INTERVAL, leader=False)
        first = probe(now, self.targets)
        due = first.due
        created, claimed, published, failed = self.materialize(now, due)
        reconciled = self.maybe_reconcile(now)
        # The probe's answer stands unless the reconciler just put rows back in the outbox
        # (this tick's own new rows left from memory; another process's arrive next tick).
        work = first.publishable or (reconciled > 0 and has_publishable(now, self.targets))
        more = 0
        if work and not failed:  # the broker just failed: the outbox waits for the next tick
            more, failed = self.dispatch(now)
            published += more
        if claimed or reconciled:
            due = earliest_due()
        sleep = self.sleep_until(due)
        if not failed and self.backlog_waits(created > published - more or more > 0):
            sleep = min(sleep, DRAIN_POLL)
        if sleep == 0.0 and not claimed:
            # Due rows that another process holds locked right now: wait a little instead
            # of spinning until it commits.
            sleep = min(LOCKED_RETRY, self.settings.MAX_INTERVAL)
        return TickResult(created, published, sleep, broker_failed=failed)

    def backlog_waits(self, maybe: bool) -> bool:
        """Whether occurrences wait in ``buffered``: asked (one query) while the last answer
        was yes, or when this tick made rows it did not hand off or handed off rows from the
        outbox (``maybe``: a released row may have a successor); an idle tick asks nothing."""
        if self._draining or maybe:
            self._draining = has_buffered()
        return self._draining

    def maintain(self, now: datetime, result: TickResult) -> None:
        """The periodic jobs; the standby beat of SQLite only keeps its heartbeat."""
        skew = None
        if result.leader and self._skew.due(now):
            skew = check_skew(self.clock, self.settings.CLOCK_SKEW_WARN)
        self.heartbeat.touch(
            now, batch_size=result.created + result.published, error=self._error, skew=skew
        )
        self._error = ""
        if not result.leader:
            return
        if self._monitor.due(now):
            report = run_monitor(now)
            if report.became_unhealthy or report.recovered:
                logger.info(
                    "monitor pass",
                    extra={
                        "action": "monitor.done",
                        "unhealthy": len(report.problems),
                        "became_unhealthy": len(report.became_unhealthy),
                        "recovered": len(report.recovered),
                    },
                )
        self.partitions.maybe_run(now)
        self.maybe_prune(now)

    def maybe_prune(self, now: datetime) -> None:
        """``SCHEDULER_RETENTION`` once a day, in slices of ``RETENTION_ROWS_PER_TICK``."""
        if not self.settings.RETENTION:
            return
        if not (self._retention.due(now) or self._pruning):
            return
        report = prune(parse_age(self.settings.RETENTION), now, max_rows=RETENTION_ROWS_PER_TICK)
        self._pruning = report.more

    def _serve_metrics(self) -> None:
        if self._metrics_started or not self.settings.METRICS_PORT:
            return
        self._metrics_started = True
        metrics.serve(self.settings.METRICS_PORT)

    def materialize(self, now: datetime, due: datetime | None) -> tuple[int, int, int, bool]:
        """Materialize every schedule due at ``now``; return (occurrences created, schedules
        claimed, occurrences published, whether the broker failed).

        Each batch's new rows are inserted leased to this beat and published from memory right
        after its commit: the first messages leave after one batch, not after the whole burst,
        and they are not read back through the outbox. Once the broker has failed in this
        tick, later rows are inserted without a lease and wait in the outbox for the next try.
        """
        created = claimed = published = 0
        broker_down = False
        lease = timedelta(seconds=self.settings.PUBLISH_LEASE)
        while due is not None and due <= now:
            # The lease starts when the batch is written, not when the tick began: a long
            # burst must not hand out leases that have already run out.
            lease_until = None if broker_down else self.clock.now() + lease
            with tracing.materializing() as span:
                batch = materialize_batch(
                    now, self.settings.BATCH_SIZE, self.revoke, lease_until=lease_until
                )
                span.created(batch.claimed, batch.created, batch.fresh)
                created += batch.created
                claimed += batch.claimed
                if batch.fresh:
                    result = hand_off(batch.fresh, now, self.publisher, self.clock.now)
                    published += result.published
                    broker_down = result.failed
            if batch.claimed < self.settings.BATCH_SIZE:
                break
        return created, claimed, published, broker_down

    def revoke(self, occurrence_ids: list[str]) -> None:
        """Ask Celery to drop or stop these occurrences (``cancel_previous``), if it can."""
        revoke = getattr(self.publisher, "revoke", None)
        if revoke is not None:
            revoke(occurrence_ids)

    def maybe_reconcile(self, now: datetime) -> int:
        """Run the reconciler every ``RECONCILE_INTERVAL`` seconds (not on every tick; the
        first pass one interval after start)."""
        if not self._reconcile.due(now):
            return 0
        report = reconcile(
            now,
            retry_grace=timedelta(seconds=self.settings.RETRY_PUBLISH_GRACE),
            dispatch_timeout=timedelta(seconds=self.settings.DISPATCH_TIMEOUT),
            max_publishes=self.settings.MAX_PUBLISHES,
        )
        if report.total:
            logger.info(
                "reconciled",
                extra={"action": "reconcile.done", **dataclasses.asdict(report)},
            )
        return report.total

    def dispatch(self, now: datetime) -> tuple[int, bool]:
        """Publish what waits in the outbox, batch by batch (the caller probed it has some)."""
        lease = timedelta(seconds=self.settings.PUBLISH_LEASE)
        published = 0
        while True:
            # Each batch's publish lease starts when it is claimed, not when the tick began:
            # a long backlog must not hand out leases that have already run out.
            result = dispatch_batch(
                self.clock.now(),
                self.publisher,
                limit=self.settings.BATCH_SIZE,
                lease=lease,
                clock_now=self.clock.now,
            )
            published += result.published
            if result.failed or result.claimed < self.settings.BATCH_SIZE:
                return published, result.failed

    def sleep_until(self, due: datetime | None) -> float:
        """Seconds until ``due`` (the earliest next_run_at), within [0, MAX_INTERVAL]."""
        if due is None:
            return self.settings.MAX_INTERVAL
        wait = (due - self.clock.now()).total_seconds()
        return min(max(wait, 0.0), self.settings.MAX_INTERVAL)

    def hold_lease(self, now: datetime) -> bool:
        """Take or renew the single-scheduler lease; False when another process holds it."""
        expires = now + timedelta(seconds=self.settings.LEASE_TTL)
        renewed = SchedulerLease.objects.filter(
            Q(owner=self.owner) | Q(expires_at__lt=now), name=LEASE_NAME
        ).update(owner=self.owner, expires_at=expires)
        if renewed:
            return True
        try:
            with transaction.atomic():
                SchedulerLease.objects.create(name=LEASE_NAME, owner=self.owner, expires_at=expires)
        except IntegrityError:
            return False
        logger.info("scheduler lease taken", extra={"action": "lease.taken", "owner": self.owner})
        return True

    def release_lease(self) -> None:
        """The beat stops: give up the SQLite lease and mark the heartbeat stopped."""
        self.heartbeat.stop(self.clock.now())
        if self.needs_lease:
            SchedulerLease.objects.filter(name=LEASE_NAME, owner=self.owner).delete()
