"""docs/events.md, "What each answer means" and "Where a request may go": "any other status
(a 4xx, a 3xx: redirects are never followed): failed: rejected at once". Attacked as a receiver
(or whoever took over its address) would: the endpoint answers a signed delivery with a
redirect to another receiver on the same allowed host, one that would verify and accept it.
The delivery must end ``failed: rejected`` at the first answer, the redirect's target must
never see the signed event, and no retry may carry it there later."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.test import override_settings

from scheduler_app.clock import FakeClock
from scheduler_app.models import OccurrenceState
from scheduler_app.webhooks.loop import DeliveryLoop
from tests.integration.event_receiver import SECRET, Receiver, receiving
from tests.integration.support import START
from tests.integration.test_events import deliver, due, stored

pytestmark = pytest.mark.django_db


@pytest.fixture
def elsewhere() -> Iterator[Receiver]:
    """Where the redirect points: a receiver that would accept the event (same secret)."""
    with receiving(Receiver()) as running:
        yield running


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_never_followed_and_fails_the_delivery_at_once(
    elsewhere: Receiver, status: int
) -> None:
    redirecting = Receiver(answers=[(status, {"Location": elsewhere.url})] * 5)
    with (
        receiving(redirecting) as endpoint,
        override_settings(
            SCHEDULER_EVENT_ENDPOINTS={"billing": {"url": endpoint.url, "secrets": [SECRET]}},
            SCHEDULER_EVENT_ALLOWED_HOSTS=("127.0.0.1",),
        ),
    ):
        clock = FakeClock(START)
        row = due(clock, max_attempts=3, retry_delay=30)
        loop = DeliveryLoop(clock=clock)
        deliver(loop)
        clock.advance(timedelta(hours=1))  # long past any backoff: nothing is tried again
        deliver(loop)
        loop.pool.shutdown()
    ended = stored(row)
    assert (ended.state, ended.reason) == (OccurrenceState.FAILED, "rejected")
    assert ended.attempts == 1
    assert f"HTTP {status}" in ended.last_error
    assert [request["status"] for request in endpoint.requests] == [status]
    assert endpoint.accepted == {}
    assert elsewhere.requests == []  # the signed event never reached the redirect's target
