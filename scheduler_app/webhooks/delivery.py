"""Deliveries: event occurrences POSTed to their endpoints, each outcome recorded once.

Each round (``Deliverer.round``) writes the outcomes of the requests that ended and starts
the event occurrences that are handed off and due (``dispatched``, or ``retrying`` with its
retry published and its time come) into the free delivery slots: at most
``SCHEDULER_EVENT_CONCURRENCY`` in flight, an endpoint's ``concurrency`` per endpoint and
``SCHEDULER_EVENT_TENANT_CONCURRENCY`` per tenant. Requests run across rounds, so a slow
endpoint holds only its own slots, and rows of a full tenant or endpoint are left out of the
search so that its backlog does not hide the others'.

Each is claimed with the worker's claim (``claiming.claim``: the compare-and-set, its lease
and fencing token, and every check a Celery worker makes: cancelled, expired, approval, the
owner's permission now, the tenant, kill switches), so two delivery processes never post the
same attempt. The requests run on a thread pool (the database stays on the calling
thread); each outcome (``outcomes``: succeeded, retrying, failed) is written, as a worker
writes it, in the first round after its request ended; ``replay_occurrence`` delivers a
failed one again under the same id.

A delivery process killed while it posts leaves its attempts ``running``: when their lease
runs out the beat's reconciler puts them back in the outbox (``lost_retry``), and they are
delivered again with the same ``webhook-id``.
"""

from __future__ import annotations

import http.client
import logging
import os
import socket
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from django.db.models import Q

from scheduler_app import observability
from scheduler_app.clock import Clock
from scheduler_app.conf import get_settings
from scheduler_app.handoff.allowlist import event_type_of
from scheduler_app.handoff.endpoints import Endpoint, EndpointError, endpoints, resolve
from scheduler_app.models import HandoffTarget, Occurrence, OccurrenceState
from scheduler_app.observability import tracing
from scheduler_app.observability.addresses import PingRefused
from scheduler_app.observability.pinned import Answer, exchange
from scheduler_app.safety import killswitch
from scheduler_app.webhooks.message import build
from scheduler_app.webhooks.outcomes import DeliveryRejected, decide, failure_of
from scheduler_app.worker import claiming, outcomes
from scheduler_app.worker.outcomes import Outcome

logger = logging.getLogger("scheduler_app.events")

SPARE = timedelta(seconds=10)
"""How much longer than ``SCHEDULER_EVENT_TIMEOUT`` a claim's lease lasts."""


@dataclass(frozen=True)
class Candidate:
    """An event occurrence ready to be delivered, as the round's query read it."""

    pk: Any
    scheduled_for: datetime
    task: str
    tenant: str
    options: Any


@dataclass
class Report:
    """What one round did."""

    outcomes: Counter[str] = field(default_factory=Counter)
    started: int = 0
    """Requests started this round."""

    @property
    def delivered(self) -> int:
        return sum(self.outcomes.values())


def owner_name() -> str:
    """The claims' owner: this delivery process."""
    return f"events@{socket.gethostname()}:{os.getpid()}"


def due(
    now: datetime,
    limit: int,
    *,
    full_tenants: Iterable[str] = (),
    full_endpoints: Iterable[str] = (),
) -> list[Candidate]:
    """Event occurrences handed off whose time has come, oldest first, leaving out the tenants
    and endpoints that have no delivery slot free (a backlog of one does not hide the
    others' rows)."""
    handed_off = Q(state=OccurrenceState.DISPATCHED) | Q(
        state=OccurrenceState.RETRYING, dispatched_at__isnull=False
    )
    rows = Occurrence.objects.filter(handed_off, target=HandoffTarget.EVENT).filter(
        not_before__lte=now + claiming.EARLY
    )
    if tenants := list(full_tenants):
        rows = rows.exclude(schedule__tenant__in=tenants)
    if endpoints := list(full_endpoints):
        rows = rows.exclude(schedule__options__endpoint__in=endpoints)
    listed = rows.order_by("not_before").values_list(
        "pk", "scheduled_for", "task", "schedule__tenant", "schedule__options"
    )
    return [Candidate(*row) for row in listed[:limit]]


@dataclass(frozen=True)
class Attempt:
    """One claimed attempt and where it goes (``endpoint`` None: refused before sending)."""

    claim: claiming.Claim
    candidate: Candidate
    endpoint: Endpoint | None
    refusal: EndpointError | None = None


class Deliverer:
    """Rounds of deliveries; ``pool`` runs the requests (a ``ThreadPoolExecutor``)."""

    def __init__(self, pool: Executor, clock: Clock, *, owner: str | None = None) -> None:
        self.pool = pool
        self.clock = clock
        self.owner = owner or owner_name()
        self.pause = time.sleep
        self.in_flight: dict[Future[Outcome], Attempt] = {}
        self.wall = partial(datetime.now, UTC)
        """The signature's ``webhook-timestamp``: the wall clock, which the receiver compares
        with its own to refuse replays, whatever clock the scheduler runs on."""

    def round(self, wait: float = 0.0) -> Report:
        """Write the outcomes of the requests that ended, start what is due within the free
        delivery slots, then wait up to ``wait`` seconds for a request to end (and write it).
        Requests run across rounds: a slow endpoint holds its own slots, not the next round."""
        settings = get_settings()
        report = Report()
        self._collect(report, timeout=0)
        now = self.clock.now()
        lease = timedelta(seconds=settings.EVENT_TIMEOUT) + SPARE
        free = settings.EVENT_CONCURRENCY - len(self.in_flight)
        if free > 0:
            per_endpoint, per_tenant = self._taken()
            full_endpoints = [
                name
                for name, endpoint in _configured().items()
                if per_endpoint[name] >= endpoint.concurrency
            ]
            full_tenants = [
                tenant
                for tenant, count in per_tenant.items()
                if count >= settings.EVENT_TENANT_CONCURRENCY
            ]
            candidates = due(
                now, free * 4, full_tenants=full_tenants, full_endpoints=full_endpoints
            )
            for candidate in self._within_limits(candidates, free, per_endpoint, per_tenant):
                attempt = self._claim(candidate, now, lease, report)
                if attempt is None:
                    continue
                if attempt.endpoint is None:
                    failure = DeliveryRejected(str(attempt.refusal), "endpoint_refused")
                    self._record(attempt, decide(_row(attempt), 0, failure, None, now), report)
                    continue
                self.in_flight[self.pool.submit(self._post, attempt)] = attempt
                report.started += 1
        if wait > 0:
            self._collect(report, timeout=wait)
        return report

    def drain(self) -> Report:
        """Wait for every request in flight and write its outcome (a stop, a test)."""
        report = Report()
        while self.in_flight:
            self._collect(report, timeout=None)
        return report

    def _collect(self, report: Report, timeout: float | None) -> None:
        """Write the outcomes of the requests that have ended (waiting up to ``timeout`` for
        the first: 0 does not wait, None waits as long as it takes)."""
        if not self.in_flight:
            return
        done, _ = wait(list(self.in_flight), timeout=timeout, return_when=FIRST_COMPLETED)
        for future in done:
            attempt = self.in_flight.pop(future)
            try:
                self._record(attempt, future.result(), report)
            except Exception:  # this row only: its lease runs out, it is delivered again
                report.outcomes["unwritten"] += 1
                logger.exception(
                    "the outcome of event %s could not be written; it is delivered again "
                    "when its lease runs out",
                    _row(attempt).pk,
                    extra={"action": "event.unwritten", "occurrence_id": str(_row(attempt).pk)},
                )

    def _taken(self) -> tuple[Counter[str], Counter[str]]:
        """Delivery slots in use, per endpoint and per tenant."""
        per_endpoint: Counter[str] = Counter()
        per_tenant: Counter[str] = Counter()
        for attempt in self.in_flight.values():
            assert attempt.endpoint is not None
            per_endpoint[attempt.endpoint.name] += 1
            per_tenant[attempt.candidate.tenant] += 1
        return per_endpoint, per_tenant

    def _within_limits(
        self,
        candidates: Iterable[Candidate],
        free: int,
        per_endpoint: Counter[str],
        per_tenant: Counter[str],
    ) -> list[Candidate]:
        tenant_limit = get_settings().EVENT_TENANT_CONCURRENCY
        chosen: list[Candidate] = []
        for candidate in candidates:
            if len(chosen) >= free:
                break
            try:
                endpoint = resolve(candidate.options, candidate.tenant, _type(candidate))
            except EndpointError:
                chosen.append(candidate)  # failed without a request: no slot taken
                continue
            if (
                per_endpoint[endpoint.name] >= endpoint.concurrency
                or per_tenant[candidate.tenant] >= tenant_limit
            ):
                continue  # a later round
            per_endpoint[endpoint.name] += 1
            per_tenant[candidate.tenant] += 1
            chosen.append(candidate)
        return chosen

    def _claim(
        self, candidate: Candidate, now: datetime, lease: timedelta, report: Report
    ) -> Attempt | None:
        claim = claiming.claim(
            candidate.pk,
            owner=self.owner,
            now=now,
            lease=lease,
            task=candidate.task,
            scheduled_for=candidate.scheduled_for,
        )
        if not claim.claimed or claim.occurrence is None:
            report.outcomes[f"refused:{claim.reason}"] += 1
            return None
        occurrence = claim.occurrence
        stopped = claim.stopped if claim.stopped is not None else killswitch.stops(occurrence)
        if stopped:
            attempt = Attempt(claim, candidate, None)
            self._record(attempt, Outcome(OccurrenceState.SKIPPED, killswitch.REASON), report)
            return None
        schedule = occurrence.schedule
        try:  # the stored row, as it is now (it may have been edited since the round's read)
            endpoint = resolve(schedule.options, schedule.tenant, _type(candidate))
        except EndpointError as exc:
            return Attempt(claim, candidate, None, exc)
        return Attempt(claim, candidate, endpoint)

    def _post(self, attempt: Attempt) -> Outcome:
        """On a pool thread: the ``scheduler.run`` span around the request, the outcome
        decided (not written: the calling thread writes it)."""
        occurrence, endpoint = _row(attempt), attempt.endpoint
        assert endpoint is not None
        with tracing.running(str(occurrence.pk)) as run:
            observability.run_started(occurrence, attempt.claim.attempt)
            try:
                with run.step("deliver"):
                    answer, error = self._send(attempt, endpoint)
                failure = failure_of(endpoint, answer, error)
                now = self.clock.now()
                outcome = decide(occurrence, attempt.claim.attempt, failure, answer, now)
            except Exception as exc:  # a row whose event cannot be built: this row alone
                error_text = f"the event could not be built: {type(exc).__name__}: {exc}"
                outcome = Outcome(OccurrenceState.FAILED, "unpublishable", error_text, exc)
            run.ended(outcome.state, outcome.reason, outcome.failure)
        return outcome

    def _send(
        self, attempt: Attempt, endpoint: Endpoint
    ) -> tuple[Answer | None, BaseException | None]:
        settings = get_settings()
        message = build(_row(attempt), endpoint, self.wall())
        try:
            return (
                exchange(
                    endpoint.url,
                    method="POST",
                    body=message.body,
                    extra_headers=message.headers,
                    timeout=settings.EVENT_TIMEOUT,
                    allowed_hosts=settings.EVENT_ALLOWED_HOSTS,
                    # Not the tenant's share of name resolutions (two at once, then refused at
                    # once: a ping's URL is the tenant's to choose); an endpoint's host is the
                    # settings', and its deliveries wait for a resolver within their deadline.
                    tenant=None,
                ),
                None,
            )
        except (OSError, http.client.HTTPException, ValueError, PingRefused) as exc:
            return None, exc

    def _record(self, attempt: Attempt, outcome: Outcome, report: Report) -> None:
        """Write the outcome (fenced; retried through a dropped connection), then announce it
        (pings, check-ins, signals)."""
        claim, occurrence = attempt.claim, _row(attempt)
        now = self.clock.now()
        if not outcomes.write_retried(lambda: outcomes.write(claim, outcome, now), self.pause):
            report.outcomes["fenced"] += 1
            logger.warning(
                "outcome not recorded: the attempt lost its lease",
                extra={"action": "event.fenced", "occurrence_id": str(occurrence.pk)},
            )
            return
        report.outcomes[outcome.state] += 1
        observability.run_finished(occurrence, outcome.state, outcome.reason, outcome.failure)
        logger.info(
            "event %s: %s%s",
            occurrence.pk,
            outcome.state,
            f" ({outcome.error})" if outcome.error else "",
            extra={
                "action": f"event.{outcome.state}",
                "occurrence_id": str(occurrence.pk),
                "reason": outcome.reason,
            },
        )


def _configured() -> dict[str, Endpoint]:
    try:
        return endpoints()
    except EndpointError:
        return {}  # every row fails on its own, saying what is wrong


def _type(candidate: Candidate) -> str:
    return event_type_of(candidate.task) or candidate.task


def _row(attempt: Attempt) -> Occurrence:
    occurrence = attempt.claim.occurrence
    assert occurrence is not None
    return occurrence
