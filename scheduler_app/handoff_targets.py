"""Handoff targets: the outbox hands each occurrence to the adapter of its target.

A target is a ``Publisher`` (``scheduler_app.outbox``): it publishes a batch of occurrences
and says which it published. Celery's is ``scheduler_app.publishing.CeleryPublisher``;
django.tasks' is ``scheduler_app.djtasks.publisher.DjangoTasksPublisher``. Outcomes come back
through each target's worker side (the ``OccurrenceTask`` base class; the django.tasks signal
receivers), which claims and records through ``scheduler_app.lifecycle``. Nothing below this
module knows which target an occurrence has, beyond the stored ``Occurrence.target``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from scheduler_app.models import Occurrence
from scheduler_app.outbox import PartialPublish, Publisher, PublishError

logger = logging.getLogger("scheduler_app.outbox")


class TargetRouter:
    """A ``Publisher`` that splits a batch by ``Occurrence.target`` (order kept per target)."""

    def __init__(self, adapters: Mapping[str, Publisher]) -> None:
        self.adapters = dict(adapters)

    def publish(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        groups: dict[str, list[Occurrence]] = {}
        for row in occurrences:
            groups.setdefault(row.target, []).append(row)
        published: list[Occurrence] = []
        missing = sorted(target for target in groups if target not in self.adapters)
        for target, rows in groups.items():
            adapter = self.adapters.get(target)
            if adapter is None:
                continue
            try:
                published.extend(adapter.publish(rows))
            except PartialPublish as exc:
                raise PartialPublish(published=published + exc.published, cause=exc.cause) from exc
            except PublishError as exc:
                raise PartialPublish(published=published, cause=str(exc)) from exc
        if missing:
            # Left in the outbox for a process that has the adapter (see docs/django-tasks.md).
            cause = (
                f"this process hands off no {' or '.join(missing)} occurrences (the Celery "
                "beat hands off both targets; run_scheduler only django.tasks')"
            )
            logger.warning(
                "%s: they stay in the outbox",
                cause,
                extra={"action": "outbox.no_target", "targets": ",".join(missing)},
            )
            raise PartialPublish(published=published, cause=cause)
        return published

    def revoke(self, occurrence_ids: list[str]) -> None:
        """Ask every target that can revoke (Celery) to drop these occurrences."""
        for adapter in self.adapters.values():
            revoke = getattr(adapter, "revoke", None)
            if revoke is not None:
                revoke(occurrence_ids)
