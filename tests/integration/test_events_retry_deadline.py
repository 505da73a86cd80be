"""docs/events.md, "What each answer means": a 408, 429, 5xx, timeout or refused connection is
``retrying`` with the schedule's backoff, never earlier than ``Retry-After``, and ``failed:
retry_past_deadline`` when the next try would be past the deadline. Attacked as an endpoint
would: it answers 503 with a ``Retry-After`` (or the backoff alone is long enough) that puts
the next try at, just before or past the occurrence's ``deadline_at``. A try that would land
at or past it fails at once and is never sent again, whatever the clock does next; one just
before it is retried and delivered."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from email.utils import format_datetime

import pytest

from scheduler_app.clock import FakeClock
from scheduler_app.dispatch.reconcile import reconcile
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.webhooks.loop import DeliveryLoop
from tests.integration.event_receiver import Receiver
from tests.integration.support import START
from tests.integration.test_events import configured, deliver, due, receiver, stored

pytestmark = pytest.mark.django_db
__all__ = ["configured", "receiver"]  # fixtures

DEADLINE = 600
"""The schedule's freshness budget, in seconds after the slot."""


RetryAfter = Callable[[datetime], str]
"""The ``Retry-After`` an endpoint answers, given the slot (the instant of the first try)."""


def seconds(count: int) -> RetryAfter:
    return lambda slot: str(count)


def http_date(after: int) -> RetryAfter:
    return lambda slot: format_datetime(slot + timedelta(seconds=after), usegmt=True)


def first_try_answered(
    configured: Receiver, retry_after: RetryAfter | None, **fields: int
) -> Occurrence:
    """An event due at its slot (with ``DEADLINE``), sent once and answered 503 (with
    ``retry_after`` when given); the row as the outcome left it."""
    clock = FakeClock(START)
    fields.setdefault("deadline", DEADLINE)
    row = due(clock, **fields)
    assert row.deadline_at == row.scheduled_for + timedelta(seconds=fields["deadline"])
    assert clock.now() == row.scheduled_for  # the first try is at the slot
    said = {} if retry_after is None else {"Retry-After": retry_after(row.scheduled_for)}
    configured.answers = [(503, said)]
    loop = DeliveryLoop(clock=clock)
    deliver(loop)
    loop.pool.shutdown()
    return stored(row)


def never_sent_again(configured: Receiver, row: Occurrence) -> None:
    """Rounds long after any backoff and the deadline (the reconciler's too) send nothing."""
    clock = FakeClock(row.scheduled_for)
    loop = DeliveryLoop(clock=clock)
    for later in (timedelta(seconds=DEADLINE - 1), timedelta(hours=25)):
        clock.set(row.scheduled_for + later)
        reconcile(clock.now(), retry_grace=timedelta(seconds=60))
        deliver(loop)
    loop.pool.shutdown()
    assert len(configured.requests) == 1
    assert configured.accepted == {}


@pytest.mark.parametrize(
    "retry_after",
    [seconds(DEADLINE), seconds(DEADLINE + 1), seconds(DEADLINE + 3600), http_date(DEADLINE + 1)],
    ids=["at-the-deadline", "a-second-past", "an-hour-past", "a-second-past-as-http-date"],
)
def test_a_retry_after_at_or_past_the_deadline_fails_the_delivery_at_once(
    configured: Receiver, retry_after: RetryAfter
) -> None:
    """``Retry-After`` lands the next try at the deadline (the reconciler expires a row at
    ``deadline_at``: no try can happen there), a second past it (in seconds or as an HTTP
    date), or an hour past it."""
    row = first_try_answered(configured, retry_after)
    assert (row.state, row.reason) == (OccurrenceState.FAILED, "retry_past_deadline")
    assert row.attempts == 1
    assert "HTTP 503" in row.last_error
    never_sent_again(configured, row)
    assert stored(row).reason == "retry_past_deadline"


def test_a_backoff_past_the_deadline_fails_the_delivery_at_once(configured: Receiver) -> None:
    """No ``Retry-After``: the schedule's own backoff (120 s, plus jitter) is past a 60 s
    deadline."""
    row = first_try_answered(configured, None, deadline=60, retry_delay=120)
    assert (row.state, row.reason) == (OccurrenceState.FAILED, "retry_past_deadline")
    never_sent_again(configured, row)


def test_a_retry_after_just_before_the_deadline_is_retried_and_delivered(
    configured: Receiver,
) -> None:
    """The boundary: a second before the deadline is still a try (the backoff, 30 to 45 s,
    is shorter, so ``Retry-After`` decides)."""
    row = first_try_answered(configured, seconds(DEADLINE - 1))
    assert row.state == OccurrenceState.RETRYING
    assert row.not_before == row.scheduled_for + timedelta(seconds=DEADLINE - 1)
    clock = FakeClock(row.not_before - timedelta(seconds=30))
    loop = DeliveryLoop(clock=clock)
    deliver(loop)
    assert len(configured.requests) == 1  # not before Retry-After
    clock.set(row.not_before)
    reconcile(clock.now(), retry_grace=timedelta(seconds=60))  # not expired yet
    deliver(loop)
    loop.pool.shutdown()
    done = stored(row)
    assert (done.state, done.attempts) == (OccurrenceState.SUCCEEDED, 2)
    assert list(configured.accepted) == [str(row.pk)]


def test_a_backoff_before_the_deadline_is_retried(configured: Receiver) -> None:
    """Without ``Retry-After`` the backoff (30 s, at most 45 s with jitter) fits in a 46 s
    deadline: retried, not failed."""
    row = first_try_answered(configured, None, deadline=46, retry_delay=30)
    assert row.state == OccurrenceState.RETRYING
    assert row.not_before < row.deadline_at
