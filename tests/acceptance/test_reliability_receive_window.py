"""The receive-before-claim window on a real worker, under the default settings.

A worker that received a scheduled message and was killed (SIGKILL) before it claimed the
occurrence used to leave it ``dispatched`` for ``SCHEDULER_DISPATCH_TIMEOUT`` (an hour), its
message hidden by Redis for the visibility timeout (an hour). With the receive lease the slot
runs on another worker within two minutes of the kill.

The window is made wide and certain with a delayed message (what jitter does): the worker
receives it at once and holds it until its eta, unclaimed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from celery import Celery

from scheduler_app import services
from scheduler_app.conf import SchedulerSettings
from scheduler_app.dispatch.materialize import materialize_batch
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.worker.receiving import DEFAULT_RECEIVE_LEASE
from tests.acceptance.e2e import Beat, Probe, Workers, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

HELD = timedelta(seconds=20)
"""How long the worker holds the message before its eta."""


def test_a_worker_killed_between_receive_and_claim_delays_the_run_by_minutes_not_an_hour(
    workers: Workers, publisher_app: Celery, probe: Callable[[], Probe]
) -> None:
    first = workers.start(pool="prefork", concurrency=1)
    seen = probe()
    at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1)
    target = services.create_schedule(
        task="e2e.effect", kind="once", rule=at.isoformat(), kwargs=seen.kwargs()
    )
    wait_for(lambda: datetime.now(UTC) > at, "the slot")
    materialize_batch(datetime.now(UTC), 10)  # the beat's first step, before any publishing
    occurrence = Occurrence.objects.get(schedule=target, state=OccurrenceState.PENDING)
    # A delay like a jitter's: the message leaves now, with an eta HELD from now.
    Occurrence.objects.filter(pk=occurrence.pk).update(not_before=datetime.now(UTC) + HELD)
    # The beat with the default settings: dispatch timeout 1 h, a reconciler pass a minute.
    assert SchedulerSettings().DISPATCH_TIMEOUT == 3600.0
    beat = Beat(publisher_app, SchedulerSettings(), period=0.2).start()
    try:
        received = wait_for(
            lambda: Occurrence.objects.filter(
                pk=occurrence.pk, received_by__gt="", state=OccurrenceState.DISPATCHED
            ).first(),
            "the worker to receive the message",
            workers,
            beat=beat,
        )
        assert received.lease_expires_at is not None and received.started_at is None
        first.kill()
        killed_at = time.monotonic()
        workers.start(pool="prefork", concurrency=1)
        done = wait_for(
            lambda: Occurrence.objects.filter(
                pk=occurrence.pk, state=OccurrenceState.SUCCEEDED
            ).first(),
            "the slot to run on the second worker",
            workers,
            timeout=DEFAULT_RECEIVE_LEASE + 60 + 30,
            beat=beat,
        )
    finally:
        beat.stop()
    assert time.monotonic() - killed_at < 120
    assert done.reason == "receiver_lost" or done.publish_count >= 2
    assert seen.executions() == 1
    assert done.attempts == 1
