"""The worker's hooks outside tasks (receipt, lease renewal, revoke) survive a connection a
database restart killed: the next use reconnects instead of failing with "the connection is
closed" until the worker restarts.

PostgreSQL: the connection is broken under Django, as a restart does, either by closing its
socket (what PgBouncer did to a busy client) or by terminating its server process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from django.db import OperationalError, connection, transaction

from scheduler_app import signals
from scheduler_app.clock import FakeClock
from scheduler_app.handoff.protocol import HEADER, context_headers
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.signals import record_revoked
from scheduler_app.worker import receiving
from scheduler_app.worker.receiving import mark_received, on_task_received
from tests.integration.support import START
from tests.integration.worker_support import due_one, fetch

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def close_socket() -> None:
    """Django still holds the connection; its socket is gone."""
    connection.connection.close()


def terminate_backend() -> None:
    """The server ends the connection's process (``pg_ctl stop -m immediate`` does this to
    every one); Django does not know."""
    pid = connection.connection.info.backend_pid
    other = connection.get_new_connection(connection.get_connection_params())
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    finally:
        other.close()


BREAKS = pytest.mark.parametrize("break_connection", [close_socket, terminate_backend])


def received(occurrence: Occurrence) -> SimpleNamespace:
    return SimpleNamespace(id=str(occurrence.pk), request_dict={HEADER: {}}, eta=None)


def open_connection() -> None:
    connection.ensure_connection()
    assert connection.connection is not None


@BREAKS
def test_a_receipt_after_the_connection_died_is_recorded(
    break_connection: Callable[[], None],
) -> None:
    clock = FakeClock(START)
    first, second = due_one(clock), due_one(clock)
    open_connection()
    break_connection()
    on_task_received(received(first))
    assert fetch(first).received_by == receiving.node_name()
    on_task_received(received(second))
    assert fetch(second).received_by == receiving.node_name()


def test_a_receipt_that_failed_leaves_no_dead_connection_behind(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The database refused the receipt (it was down): logged, the connection dropped, and
    the next receipt, with the database back, is recorded."""
    clock = FakeClock(START)
    first, second = due_one(clock), due_one(clock)

    def down(*args: Any, **kwargs: Any) -> int:
        raise OperationalError("connection refused")

    monkeypatch.setattr(receiving, "mark_received", down)
    with caplog.at_level(logging.WARNING, logger="scheduler_app.receiving"):
        on_task_received(received(first))
    actions = [r.action for r in caplog.records if r.name == "scheduler_app.receiving"]
    assert actions == ["occurrence.receipt_failed"]
    assert connection.connection is None  # dropped: the next use opens a new one
    monkeypatch.setattr(receiving, "mark_received", mark_received)
    on_task_received(received(second))
    assert fetch(second).received_by == receiving.node_name()


@BREAKS
def test_the_lease_renewal_after_the_connection_died_renews(
    break_connection: Callable[[], None],
) -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock)
    on_task_received(received(occurrence))
    before = fetch(occurrence).lease_expires_at
    assert before is not None
    open_connection()
    break_connection()
    receiving._renew_now()  # the consumer's timer, on the main thread of a prefork worker
    after = fetch(occurrence).lease_expires_at
    assert after is not None and after > before


@BREAKS
def test_a_revoke_after_the_connection_died_is_recorded(
    break_connection: Callable[[], None],
) -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock)
    request = SimpleNamespace(id=str(occurrence.pk), retries=0)
    setattr(request, HEADER, context_headers(occurrence))
    open_connection()
    break_connection()
    record_revoked(request=request)
    stored = fetch(occurrence)
    assert (stored.state, stored.reason) == (OccurrenceState.CANCELLED, "revoked")


def test_a_revoke_the_database_refused_is_logged_not_raised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock)
    request = SimpleNamespace(id=str(occurrence.pk), retries=0)
    setattr(request, HEADER, context_headers(occurrence))

    def down(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(signals, "_record_revoked", down)
    with caplog.at_level(logging.WARNING, logger="scheduler_app.signals"):
        record_revoked(request=request)
    assert [r.action for r in caplog.records if r.name == "scheduler_app.signals"] == [
        "occurrence.revoke_failed"
    ]
    assert connection.connection is None


def test_a_connection_inside_a_callers_transaction_is_left_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not ours to close: the hook logs its failure and the transaction goes on."""
    clock = FakeClock(START)
    occurrence = due_one(clock)

    def down(*args: Any, **kwargs: Any) -> int:
        raise OperationalError("connection refused")

    monkeypatch.setattr(receiving, "mark_received", down)
    with transaction.atomic():
        on_task_received(received(occurrence))
        assert connection.connection is not None
        assert Occurrence.objects.filter(pk=occurrence.pk).exists()
