"""The outbox hands each occurrence to its target's adapter (``TargetRouter``)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from scheduler_app.handoff.protocol import PartialPublish
from scheduler_app.handoff.router import TargetRouter
from scheduler_app.models import HandoffTarget, Occurrence


class Adapter:
    def __init__(self, fail_after: int | None = None) -> None:
        self.got: list[Occurrence] = []
        self.fail_after = fail_after
        self.revoked: list[str] = []

    def publish(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        batch = list(occurrences)
        if self.fail_after is not None:
            self.got.extend(batch[: self.fail_after])
            raise PartialPublish(published=batch[: self.fail_after], cause="down")
        self.got.extend(batch)
        return batch

    def revoke(self, ids: list[str]) -> None:
        self.revoked.extend(ids)


def rows(*targets: str) -> list[Occurrence]:
    return [Occurrence(task=f"t{n}", target=target) for n, target in enumerate(targets)]


def test_each_row_goes_to_its_targets_adapter_in_order() -> None:
    celery, djtasks = Adapter(), Adapter()
    batch = rows("celery", "django_tasks", "celery", "django_tasks")
    router = TargetRouter({HandoffTarget.CELERY: celery, HandoffTarget.DJANGO_TASKS: djtasks})
    assert router.publish(batch) == [batch[0], batch[2], batch[1], batch[3]]
    assert celery.got == [batch[0], batch[2]]
    assert djtasks.got == [batch[1], batch[3]]


def test_rows_of_a_target_without_adapter_are_returned_unpublished() -> None:
    """Not a broker failure: the outbox gives them back for a process that serves them."""
    djtasks = Adapter()
    batch = rows("celery", "django_tasks")
    router = TargetRouter({HandoffTarget.DJANGO_TASKS: djtasks})
    assert router.publish(batch) == [batch[1]]
    assert router.targets == {"django_tasks"}


def test_a_failing_adapter_reports_what_was_published_before() -> None:
    celery, djtasks = Adapter(), Adapter(fail_after=1)
    batch = rows("celery", "django_tasks", "django_tasks")
    router = TargetRouter({HandoffTarget.CELERY: celery, HandoffTarget.DJANGO_TASKS: djtasks})
    with pytest.raises(PartialPublish) as raised:
        router.publish(batch)
    assert raised.value.published == [batch[0], batch[1]]


def test_revoke_reaches_the_adapters_that_can() -> None:
    celery = Adapter()
    TargetRouter({HandoffTarget.CELERY: celery, "other": object()}).revoke(["a"])  # type: ignore[dict-item]
    assert celery.revoked == ["a"]
