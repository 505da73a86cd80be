"""Publishing occurrences as ordinary Celery task messages.

Batch paths and the per-message path, one message. On kombu's Redis and py-amqp transports a
batch is built message by message the way ``send_task`` builds it (Celery's
``create_task_message`` and ``send_task_message``, kombu's ``Producer.publish`` and
``Channel.prepare_message``), then sent the transport's own way: Redis writes it with one
non-transactional pipeline per chunk (the same list keys and the same JSON envelope kombu's
``Channel._put`` writes); AMQP publishes it on one channel with publisher confirms and counts a
message as published once the broker has confirmed it. Every other transport (the demo's
``filesystem://``, ``memory://``) keeps the per-message ``send_task`` path. Workers cannot tell
the paths apart.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from celery import Celery
from kombu import Producer
from kombu.exceptions import KombuError

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.handoff.protocol import PartialPublish
from scheduler_app.models import HandoffTarget, Occurrence
from scheduler_app.observability import tracing
from scheduler_app.publishing.amqp import AMQP_ERRORS, AmqpConfirmPublisher, is_amqp_broker
from scheduler_app.publishing.calls import (
    BROKER_ERRORS,
    ROUTING_OPTIONS,
    TaskCall,
    Unsupported,
    eta_of,
    routing_options,
)
from scheduler_app.publishing.redis import RedisPipelinePublisher, is_redis_broker, pipeline_applies

__all__ = [
    "BROKER_ERRORS",
    "ROUTING_OPTIONS",
    "CeleryPublisher",
    "TaskCall",
    "Unsupported",
    "routing_options",
]

logger = logging.getLogger("scheduler_app.publishing")

REDIS = "redis"
AMQP = "amqp"


class CeleryPublisher:
    """``send_task`` semantics with ``task_id`` = occurrence id, one producer per batch.

    Workers see a normal Celery message: the task's kwargs are the payload snapshot, the
    occurrence context travels in the ``scheduler`` header. ``pipeline`` turns the batch path
    off (``False``: ``send_task`` per message) or forces it on (``True``: the AMQP path on
    kombu's py-amqp transport, the Redis pipeline otherwise); by default the batch path is used
    exactly when the broker's transport has one (Redis, AMQP).
    """

    targets = frozenset({HandoffTarget.CELERY.value})
    """The rows it serves (the outbox claims no others for it)."""

    def __init__(
        self, app: Celery, *, pipeline: bool | None = None, clock: Clock | None = None
    ) -> None:
        self.app = app
        self._pipeline = pipeline
        self._path: str | None = None
        self.clock = clock or SystemClock()

    @property
    def uses_pipeline(self) -> bool:
        """Whether batches take a batch path (Redis pipeline or AMQP confirms)."""
        return self.batch_path is not None

    @property
    def batch_path(self) -> str | None:
        """``"amqp"``, ``"redis"``, or ``None`` for ``send_task`` per message; found once."""
        if self._pipeline is False:
            return None
        if self._path is None:
            if is_amqp_broker(self.app):
                self._path = AMQP
            elif self._pipeline or is_redis_broker(self.app):
                self._path = REDIS
            else:
                self._pipeline = False
        return self._path

    def publish(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        path = self.batch_path if occurrences else None
        if path is not None and pipeline_applies(self.app):
            if path == AMQP and self._native_delay(occurrences):
                return self._publish_each(occurrences)
            if path == AMQP:
                return AmqpConfirmPublisher(self.app, self.clock.now()).publish(occurrences)
            try:
                return RedisPipelinePublisher(self.app, self.clock.now()).publish(occurrences)
            except Unsupported as exc:  # raised before anything was written
                logger.info(
                    "batch published message by message",
                    extra={"action": "publish.pipeline_fallback", "reason": str(exc)},
                )
        return self._publish_each(occurrences)

    def _native_delay(self, occurrences: Sequence[Occurrence]) -> bool:
        """Whether ``send_task`` would reroute one of these through RabbitMQ's native delayed
        delivery (an eta, and quorum queues in the app: Celery 5.5+). The batch path does not
        reproduce that rerouting, so such a batch goes message by message (retries with a
        backoff are the only occurrences with an eta)."""
        now = self.clock.now()
        if not any(eta_of(occurrence, now) for occurrence in occurrences):
            return False
        try:  # Celery 5.5+; 5.4 has no native delayed delivery
            from celery.utils.quorum_queues import detect_quorum_queues
        except ImportError:  # pragma: no cover - depends on the installed Celery
            return False
        return bool(detect_quorum_queues(self.app, "amqp")[0])

    def revoke(self, occurrence_ids: list[str]) -> None:
        """Tell workers to drop these task ids if they have not started them (best effort:
        a running task stops cooperatively through ``check_cancelled()``)."""
        try:
            self.app.control.revoke(occurrence_ids)
        except (KombuError, OSError, ConnectionError):
            logger.warning(
                "revoke not sent; the cancellation flag still stands",
                extra={"action": "outbox.revoke_failed", "count": len(occurrence_ids)},
            )

    def _publish_each(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        published: list[Occurrence] = []
        now = self.clock.now()
        try:
            with self.app.producer_or_acquire() as producer:
                for occurrence in occurrences:
                    with tracing.publishing(occurrence):
                        self._send(occurrence, producer, now)
                    published.append(occurrence)
        except AMQP_ERRORS as exc:  # the broker errors of every transport, py-amqp's too
            raise PartialPublish(published=published, cause=repr(exc)) from exc
        return published

    def _send(self, occurrence: Occurrence, producer: Producer, now: datetime) -> None:
        call = TaskCall.of(occurrence, now)
        self.app.send_task(
            call.name,
            args=call.args or None,
            kwargs=call.kwargs,
            task_id=call.task_id,
            headers=call.headers,
            expires=call.expires,
            eta=call.eta,
            producer=producer,
            retry=False,
            **call.routing,
        )
