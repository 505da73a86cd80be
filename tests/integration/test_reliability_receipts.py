"""Receive leases: only an occurrence whose receiving worker stopped renewing is published
again; one still waiting in the queue (no worker has it) is left alone, so a backlogged queue
is not flooded with copies."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest

from scheduler_app.clock import FakeClock
from scheduler_app.dispatch.reconcile import reconcile
from scheduler_app.handoff.protocol import HEADER
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.worker.receiving import mark_received, on_task_received, receive_lease, renew
from tests.integration.support import START
from tests.integration.worker_support import due_one, fetch

pytestmark = pytest.mark.django_db
LEASE = timedelta(seconds=30)
GRACE = timedelta(seconds=60)


def test_a_lost_receiver_is_republished_a_queued_message_is_not() -> None:
    clock = FakeClock(START)
    held = due_one(clock)
    queued = due_one(clock)
    renewed = due_one(clock)
    mark_received(held.pk, node="dead:1", now=clock.now(), lease=LEASE)
    mark_received(renewed.pk, node="alive:2", now=clock.now(), lease=LEASE)
    for _ in range(4):  # the live worker renews every 10 s; the dead one does not
        clock.advance(timedelta(seconds=10))
        renew("alive:2", clock.now(), LEASE)
    report = reconcile(clock.now(), retry_grace=GRACE)
    assert report.republished == 1
    lost = fetch(held)
    assert (lost.state, lost.reason, lost.received_by) == (
        OccurrenceState.PENDING,
        "receiver_lost",
        "",
    )
    assert fetch(queued).state == OccurrenceState.DISPATCHED  # nobody has it: the queue's
    assert fetch(renewed).state == OccurrenceState.DISPATCHED
    assert fetch(renewed).received_by == "alive:2"


def test_a_claimed_occurrence_is_not_a_receipt_any_more() -> None:
    from scheduler_app.worker import claiming

    clock = FakeClock(START)
    occurrence = due_one(clock)
    mark_received(occurrence.pk, node="w:1", now=clock.now(), lease=LEASE)
    claiming.claim(occurrence.pk, owner="w:1", now=clock.now(), lease=timedelta(hours=1))
    clock.advance(timedelta(minutes=5))
    reconcile(clock.now(), retry_grace=GRACE)
    assert fetch(occurrence).state == OccurrenceState.RUNNING


def test_the_signal_handler_leases_only_scheduled_deliveries() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock)
    plain = SimpleNamespace(id=str(occurrence.pk), request_dict={})
    on_task_received(plain)
    assert fetch(occurrence).received_by == ""
    scheduled = SimpleNamespace(id=str(occurrence.pk), request_dict={HEADER: {}})
    on_task_received(scheduled)
    row = Occurrence.objects.get(pk=occurrence.pk)
    assert row.received_by and row.received_at is not None
    assert receive_lease() == timedelta(seconds=30)


def test_a_solo_worker_writes_no_receipt_for_a_delivery_it_runs_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its claim follows in the same thread; a delivery with an ETA waits, so it is leased."""
    from scheduler_app.worker import receiving

    monkeypatch.setattr(receiving, "_runs_at_once", [True])
    clock = FakeClock(START)
    now, later = due_one(clock), due_one(clock)
    task = SimpleNamespace(rate_limit=None)
    on_task_received(
        SimpleNamespace(id=str(now.pk), request_dict={HEADER: {}}, eta=None, task=task)
    )
    assert fetch(now).received_by == ""
    eta = SimpleNamespace(id=str(later.pk), request_dict={HEADER: {}}, eta=clock.now(), task=task)
    on_task_received(eta)
    assert fetch(later).received_by != ""
