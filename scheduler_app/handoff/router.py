"""Handoff targets: the outbox hands each occurrence to the adapter of its target.

A target is a ``Publisher`` (``scheduler_app.dispatch.outbox``): it publishes a batch of occurrences
and says which it published. Celery's is ``scheduler_app.publishing.CeleryPublisher``;
django.tasks' is ``scheduler_app.djtasks.publisher.DjangoTasksPublisher``. Outcomes come back
through each target's worker side (the ``OccurrenceTask`` base class; the django.tasks signal
receivers), which claims and records through ``scheduler_app.worker.lifecycle``. Nothing below this
module knows which target an occurrence has, beyond the stored ``Occurrence.target``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from scheduler_app.handoff.protocol import PartialPublish, Publisher, PublishError
from scheduler_app.models import Occurrence

logger = logging.getLogger("scheduler_app.outbox")


class TargetRouter:
    """A ``Publisher`` that splits a batch by ``Occurrence.target`` (order kept per target).

    It serves the targets it has an adapter for (``targets``): the outbox claims only rows of
    those, so a row of another target stays pending for a process that serves it.
    """

    def __init__(self, adapters: Mapping[str, Publisher]) -> None:
        self.adapters = dict(adapters)
        self.targets = frozenset(self.adapters)

    def publish(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        groups: dict[str, list[Occurrence]] = {}
        for row in occurrences:
            groups.setdefault(row.target, []).append(row)
        published: list[Occurrence] = []
        for target, rows in groups.items():
            adapter = self.adapters.get(target)
            if adapter is None:
                # Not a broker failure: returned unpublished, given back to the outbox.
                logger.warning(
                    "this process hands off no %s occurrences: they stay in the outbox",
                    target,
                    extra={"action": "outbox.no_target", "targets": target, "count": len(rows)},
                )
                continue
            try:
                published.extend(adapter.publish(rows))
            except PartialPublish as exc:
                raise PartialPublish(published=published + exc.published, cause=exc.cause) from exc
            except PublishError as exc:
                raise PartialPublish(published=published, cause=str(exc)) from exc
        return published

    def revoke(self, occurrence_ids: list[str]) -> None:
        """Ask every target that can revoke (Celery) to drop these occurrences."""
        for adapter in self.adapters.values():
            revoke = getattr(adapter, "revoke", None)
            if revoke is not None:
                revoke(occurrence_ids)
