"""What one delivery's answer means (pure: nothing is written here; ``delivery`` writes it).

- 2xx: ``succeeded``;
- 408, 429, 5xx, a timeout or a connection error (``DeliveryFailed``): ``retrying`` with the
  schedule's backoff, no earlier than the answer's ``Retry-After`` (seconds or an HTTP date, at
  most ``MAX_RETRY_AFTER`` ahead), never past the deadline; ``failed`` once the attempts are
  used up;
- any other status (a 4xx, a redirect: never followed) and an endpoint refused before sending
  (``DeliveryRejected``): ``failed`` at once (``rejected``, ``endpoint_refused``).
"""

from __future__ import annotations

import email.utils
from datetime import UTC, datetime, timedelta

from scheduler_app.errors import PermanentTaskError, ScheduleValidationError
from scheduler_app.handoff.endpoints import Endpoint
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.observability.addresses import PingRefused
from scheduler_app.observability.pinned import Answer
from scheduler_app.policies.retry import RetryPolicy, decide_retry
from scheduler_app.worker.outcomes import Outcome

RETRIED = frozenset({408, 429})
"""Statuses below 500 that are retried (with every 5xx)."""
MAX_RETRY_AFTER = timedelta(hours=24)
"""A ``Retry-After`` further ahead than this is read as this."""
EXCERPT = 300
"""Characters of an answer's body kept in the error."""


class DeliveryFailed(Exception):
    """The endpoint could not take the event now (a status retried, a timeout, no
    connection): retried."""


class DeliveryRejected(PermanentTaskError):
    """The endpoint refused the event, or it may not be sent there: never retried."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def retry_after(answer: Answer, now: datetime) -> datetime | None:
    """The instant an answer's ``Retry-After`` (seconds or an HTTP date) names, at most
    ``MAX_RETRY_AFTER`` ahead; None when there is none or it cannot be read."""
    value = answer.headers.get("retry-after", "").strip()
    if not value:
        return None
    if value.isascii() and value.isdigit():  # "²".isdigit() is True too
        at = now + timedelta(seconds=int(value[:9]))
    else:
        try:
            at = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if at.tzinfo is None:
            at = at.replace(tzinfo=UTC)
    return min(at, now + MAX_RETRY_AFTER)


def _excerpt(answer: Answer) -> str:
    """The start of an answer's body on one line, printable characters only."""
    text = answer.body.decode("utf-8", "replace")
    shown = "".join(c if c.isprintable() else " " for c in text)
    return " ".join(shown.split())[:EXCERPT]


def failure_of(
    endpoint: Endpoint, answer: Answer | None, error: BaseException | None
) -> BaseException | None:
    """What went wrong with one request (None: a 2xx)."""
    if answer is not None:
        said = f"endpoint {endpoint.name!r} answered HTTP {answer.status}"
        body = _excerpt(answer)
        said = f"{said}: {body}" if body else said
        if 200 <= answer.status < 300:
            return None
        if answer.status in RETRIED or answer.status >= 500:
            return DeliveryFailed(said)
        if 300 <= answer.status < 400:
            return DeliveryRejected(f"{said} (redirects are not followed)", "rejected")
        return DeliveryRejected(said, "rejected")
    # Said by the endpoint's name only: its host and addresses are the settings', and an error
    # is shown to whoever may see the occurrence.
    if isinstance(error, PingRefused | ScheduleValidationError):
        return DeliveryRejected(
            f"endpoint {endpoint.name!r} refused: its host resolves to a private, loopback or "
            "link-local address, or its port is not 80 or 443; list the host in "
            "SCHEDULER_EVENT_ALLOWED_HOSTS if it is meant to receive events",
            "endpoint_refused",
        )
    reason = getattr(error, "strerror", None) or ("timed out" if _timed_out(error) else "")
    said = f"endpoint {endpoint.name!r}: {type(error).__name__}"
    return DeliveryFailed(f"{said}: {reason}" if reason else said)


def _timed_out(error: BaseException | None) -> bool:
    return isinstance(error, TimeoutError) or "timed out" in str(error).lower()


def decide(
    occurrence: Occurrence,
    attempt: int,
    failure: BaseException | None,
    answer: Answer | None,
    now: datetime,
) -> Outcome:
    """The outcome of one attempt (pure: nothing is written)."""
    if failure is None:
        return Outcome(OccurrenceState.SUCCEEDED)
    error = str(failure)
    if isinstance(failure, DeliveryRejected):
        return Outcome(OccurrenceState.FAILED, failure.reason, error, failure)
    schedule = occurrence.schedule
    decision = decide_retry(
        failure,
        attempt=attempt,
        now=now,
        deadline_at=occurrence.deadline_at,
        policy=RetryPolicy(max_attempts=schedule.max_attempts, base_delay=schedule.retry_delay),
    )
    if not decision.retry or decision.at is None:
        return Outcome(OccurrenceState.FAILED, decision.reason, error, failure)
    at = max(decision.at, (answer and retry_after(answer, now)) or decision.at)
    if occurrence.deadline_at is not None and at >= occurrence.deadline_at:
        return Outcome(OccurrenceState.FAILED, "retry_past_deadline", error, failure)
    return Outcome(OccurrenceState.RETRYING, decision.reason, error, failure, at)
