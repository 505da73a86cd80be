"""Publishing occurrences as ordinary Celery task messages."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from celery import Celery
from kombu import Producer
from kombu.exceptions import KombuError

from scheduler_app.models import Occurrence
from scheduler_app.outbox import HEADER, PartialPublish, context_headers

logger = logging.getLogger("scheduler_app.publishing")


class CeleryPublisher:
    """``send_task`` with ``task_id`` = occurrence id, over one producer connection per batch.

    Workers see a normal Celery message: the task's kwargs are the payload snapshot, the
    occurrence context travels in the ``scheduler`` header.
    """

    def __init__(self, app: Celery) -> None:
        self.app = app

    def publish(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        published: list[Occurrence] = []
        try:
            with self.app.producer_or_acquire() as producer:
                for occurrence in occurrences:
                    self._send(occurrence, producer)
                    published.append(occurrence)
        except (KombuError, OSError, ConnectionError) as exc:
            raise PartialPublish(published=published, cause=repr(exc)) from exc
        return published

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

    def _send(self, occurrence: Occurrence, producer: Producer) -> None:
        eta = occurrence.not_before if occurrence.not_before > occurrence.scheduled_for else None
        self.app.send_task(
            occurrence.task,
            kwargs=occurrence.kwargs,
            task_id=str(occurrence.id),
            headers={HEADER: context_headers(occurrence)},
            expires=occurrence.deadline_at,
            eta=eta,
            producer=producer,
            retry=False,
        )
