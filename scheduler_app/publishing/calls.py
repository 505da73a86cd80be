"""What is sent for one occurrence, independent of the transport."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from kombu.exceptions import KombuError

from scheduler_app.handoff.protocol import HEADER, context_headers
from scheduler_app.models import Occurrence
from scheduler_app.observability import tracing
from scheduler_app.safety.routing import ROUTING_OPTIONS, checked_options

BROKER_ERRORS: tuple[type[BaseException], ...] = (KombuError, OSError, ConnectionError)
try:  # only with the Redis client installed (the ``redis`` extra); AMQP users may not have it
    from redis.exceptions import RedisError

    BROKER_ERRORS = (*BROKER_ERRORS, RedisError)
except ImportError:  # pragma: no cover - depends on the installed extras
    pass


class TaskCall(NamedTuple):
    """The ``send_task`` arguments for one occurrence, shared by both paths (a named tuple:
    immutable, and built in a third of a frozen dataclass's time, once per message)."""

    name: str
    task_id: str
    args: list[Any]
    """The stored positional arguments (usually none)."""
    kwargs: dict[str, Any]
    headers: dict[str, Any]
    expires: datetime | None
    eta: datetime | None
    routing: dict[str, Any]
    """The schedule's own routing options (``Schedule.options``); they win over task_routes."""

    @classmethod
    def of(cls, occurrence: Occurrence, now: datetime) -> TaskCall:
        """``eta`` only for a deliberate delay (a retry's backoff: ``not_before`` after the
        slot) that has not run out by the beat's clock. A run already due, such as a lost run
        put back in the outbox, or a slot published after the clock stepped back, goes without
        one, so a worker never holds it back for a difference between clocks."""
        return cls(
            name=occurrence.task,
            task_id=str(occurrence.id),
            args=occurrence.args or [],
            kwargs=occurrence.kwargs,
            headers={HEADER: context_headers(occurrence), **tracing.message_headers(occurrence)},
            expires=occurrence.deadline_at,
            eta=eta_of(occurrence, now),
            routing=routing_options(occurrence.schedule.options),
        )


def eta_of(occurrence: Occurrence, now: datetime) -> datetime | None:
    """The ``eta`` a message carries: ``not_before`` when it is still ahead of the slot and
    of ``now`` (see ``TaskCall.of``)."""
    not_before = occurrence.not_before
    return not_before if not_before > max(now, occurrence.scheduled_for) else None


def routing_options(options: dict[str, Any] | None) -> dict[str, Any]:
    """The schedule's routing options, checked again (a row stored past the service layer):
    ``InvalidRouting`` for this occurrence alone, which the handoff parks."""
    return checked_options(options)


__all__ = [
    "BROKER_ERRORS",
    "ROUTING_OPTIONS",
    "TaskCall",
    "Unsupported",
    "eta_of",
    "routing_options",
]


class Unsupported(Exception):
    """A route the pipeline does not reproduce (fanout, expiring queues): use ``send_task``."""
