"""The loop behind ``manage.py run_event_deliveries``: the event target's delivery process.

Each round hands the due event occurrences off in the outbox (``EventPublisher``, through the
same claim, screen and marks as every target) and delivers what is handed off and due
(``Deliverer``). A beat materializes the slots: ``celery beat -S ...`` or ``run_scheduler``
beside it, or this process itself with ``beat=True`` (``--beat``: the ``Ticker`` of every
beat, serving only events; for a project without Celery or django.tasks). Several may run at
once: the outbox claim skips locked rows and each delivery is a compare-and-set claim. SIGTERM
and SIGINT end the loop after the current round, whose requests finish first (each within
``SCHEDULER_EVENT_TIMEOUT``).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from types import FrameType

from django.db import DatabaseError

from scheduler_app.beat import Failures
from scheduler_app.clock import Clock, SystemClock
from scheduler_app.conf import get_settings
from scheduler_app.db import connections
from scheduler_app.dispatch.outbox import dispatch_batch
from scheduler_app.handoff.router import TargetRouter
from scheduler_app.models import HandoffTarget
from scheduler_app.ticker import Ticker
from scheduler_app.webhooks.delivery import Deliverer
from scheduler_app.webhooks.publisher import EventPublisher

logger = logging.getLogger("scheduler_app.events")

IDLE = 1.0
"""Seconds between two rounds that found nothing to do."""


class DeliveryLoop:
    """Rounds until stopped; ``wait`` is how it sleeps (an ``Event.wait``: a stop wakes it)."""

    def __init__(
        self, *, clock: Clock | None = None, owner: str | None = None, beat: bool = False
    ) -> None:
        self.clock = clock or SystemClock()
        self.publisher = EventPublisher(self.clock)
        self.ticker = (
            Ticker(TargetRouter({HandoffTarget.EVENT: self.publisher}), clock=clock, owner=owner)
            if beat
            else None
        )
        self.pool = ThreadPoolExecutor(
            max_workers=get_settings().EVENT_CONCURRENCY, thread_name_prefix="scheduler-event"
        )
        self.deliverer = Deliverer(self.pool, self.clock, owner=owner)
        self.stopping = threading.Event()
        self.wait: Callable[[float], bool] = self.stopping.wait
        self.rounds = 0
        self.delivered = 0
        self.failures = Failures(logger, "delivery round", "events.round_failed")

    @property
    def owner(self) -> str:
        return self.deliverer.owner

    def stop(self, signum: int | None = None, frame: FrameType | None = None) -> None:
        if not self.stopping.is_set():
            logger.info("stopping after this round", extra={"action": "events.stopping"})
        self.stopping.set()

    def install_signals(self) -> None:
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)

    def step(self, wait: float = 0.0) -> bool:
        """One round: hand off, then deliver (waiting up to ``wait`` seconds for a request in
        flight to end); True when it did something (go on at once)."""
        settings = get_settings()
        ticked = self.ticker.tick().published if self.ticker is not None else 0
        handed = dispatch_batch(
            self.clock.now(),
            self.publisher,
            limit=settings.BATCH_SIZE,
            lease=timedelta(seconds=settings.PUBLISH_LEASE),
            clock_now=self.clock.now,
        )
        report = self.deliverer.round(wait=wait)
        self.delivered += report.delivered
        if report.delivered:
            logger.info(
                "round: %d handed off, %d sent, %s",
                handed.published,
                report.started,
                ", ".join(f"{count} {what}" for what, count in sorted(report.outcomes.items())),
                extra={"action": "events.round", "delivered": report.delivered},
            )
        return bool(handed.published or report.delivered or report.started or ticked)

    def drain(self) -> None:
        """Write the outcome of every request in flight (each ends within its timeout)."""
        self.delivered += self.deliverer.drain().delivered

    def run(self, *, max_rounds: int | None = None) -> None:
        """Round after round until ``stop`` (or ``max_rounds``); a failed round is logged and
        answered with a growing pause (1, 2, 4 ... 30 s)."""
        try:
            while not self.stopping.is_set():
                pause = self._round()
                self.rounds += 1
                if max_rounds is not None and self.rounds >= max_rounds:
                    break
                if pause:
                    self.wait(pause)
        finally:
            with contextlib.suppress(DatabaseError):  # unwritten: the leases run out
                self.drain()
            self.pool.shutdown(wait=True)
            if self.ticker is not None:
                with contextlib.suppress(DatabaseError):  # the database is away: it expires
                    self.ticker.release_lease()

    def _round(self) -> float:
        connections.drop_unusable()  # Django's close_old_connections, minus open transactions
        try:
            # With requests in flight, the round waits for the first to end, not the pause.
            busy = self.step(wait=IDLE)
        except Exception as exc:
            return self.failures.failed(exc)
        self.failures.passed()
        if self.ticker is not None:
            self.ticker.settle()  # once: the start-up is done
        return 0.0 if busy or self.deliverer.in_flight else IDLE
