"""Publishing occurrences as ordinary Celery task messages.

Two paths, one message. On kombu's Redis transport a batch is built message by message the way
``send_task`` builds it (Celery's ``create_task_message`` and ``send_task_message``, kombu's
``Producer.publish`` and ``Channel.prepare_message``), then written with one non-transactional
Redis pipeline per chunk: the same list keys and the same JSON envelope kombu's ``Channel._put``
writes. Every other transport (AMQP, the demo's ``filesystem://``, ``memory://``) keeps the
per-message ``send_task`` path. Workers cannot tell the two apart.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from celery import Celery
from kombu import Producer
from kombu.exceptions import KombuError

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.models import Occurrence
from scheduler_app.outbox import PartialPublish
from scheduler_app.publishing.calls import (
    BROKER_ERRORS,
    ROUTING_OPTIONS,
    TaskCall,
    Unsupported,
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


class CeleryPublisher:
    """``send_task`` semantics with ``task_id`` = occurrence id, one producer per batch.

    Workers see a normal Celery message: the task's kwargs are the payload snapshot, the
    occurrence context travels in the ``scheduler`` header. ``pipeline`` forces the Redis
    pipeline path on (``True``) or off (``False``); by default it is used exactly when the
    broker is kombu's Redis transport.
    """

    def __init__(
        self, app: Celery, *, pipeline: bool | None = None, clock: Clock | None = None
    ) -> None:
        self.app = app
        self._pipeline = pipeline
        self.clock = clock or SystemClock()

    @property
    def uses_pipeline(self) -> bool:
        if self._pipeline is None:
            self._pipeline = is_redis_broker(self.app)
        return self._pipeline

    def publish(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        if occurrences and self.uses_pipeline and pipeline_applies(self.app):
            try:
                return RedisPipelinePublisher(self.app, self.clock.now()).publish(occurrences)
            except Unsupported as exc:  # raised before anything was written
                logger.info(
                    "batch published message by message",
                    extra={"action": "publish.pipeline_fallback", "reason": str(exc)},
                )
        return self._publish_each(occurrences)

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
                    self._send(occurrence, producer, now)
                    published.append(occurrence)
        except (KombuError, OSError, ConnectionError) as exc:
            raise PartialPublish(published=published, cause=repr(exc)) from exc
        return published

    def _send(self, occurrence: Occurrence, producer: Producer, now: datetime) -> None:
        call = TaskCall.of(occurrence, now)
        self.app.send_task(
            call.name,
            kwargs=call.kwargs,
            task_id=call.task_id,
            headers=call.headers,
            expires=call.expires,
            eta=call.eta,
            producer=producer,
            retry=False,
            **call.routing,
        )
