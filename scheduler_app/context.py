"""The occurrence context a scheduled task sees: one frozen object, read from the message."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from celery import current_task

from scheduler_app.outbox import HEADER


@dataclass(frozen=True, kw_only=True)
class OccurrenceContext:
    occurrence_id: str
    schedule_id: str
    schedule_version: int | None
    idempotency_key: str
    scheduled_for: datetime
    window_start: datetime
    window_end: datetime
    timezone: str
    trigger: str
    catch_up: bool
    objective: str
    deadline_at: datetime | None
    attempt: int = 1

    @classmethod
    def from_header(cls, header: dict[str, Any], attempt: int = 1) -> OccurrenceContext:
        return cls(
            occurrence_id=header["occurrence_id"],
            schedule_id=header["schedule_id"],
            schedule_version=header.get("schedule_version"),
            idempotency_key=header["idempotency_key"],
            scheduled_for=_parse(header["scheduled_for"]),
            window_start=_parse(header["window_start"]),
            window_end=_parse(header["window_end"]),
            timezone=header["timezone"],
            trigger=header["trigger"],
            catch_up=bool(header.get("catch_up")),
            objective=header.get("objective") or "",
            deadline_at=_parse(header["deadline_at"]) if header.get("deadline_at") else None,
            attempt=attempt,
        )

    @property
    def window(self) -> tuple[datetime, datetime]:
        """The business period this run covers: (previous slot, this slot)."""
        return self.window_start, self.window_end

    def remaining(self, now: datetime | None = None) -> float | None:
        """Seconds left before the deadline (None when there is no deadline).

        Ask before an expensive step; ``now`` defaults to the wall clock (tests pass one).
        """
        if self.deadline_at is None:
            return None
        return (self.deadline_at - (now or datetime.now(UTC))).total_seconds()


def _parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def context_from_request(request: Any) -> OccurrenceContext | None:
    """The context carried by a Celery task request, or None for a task not run by us."""
    header = getattr(request, HEADER, None)
    if header is None and isinstance(getattr(request, "headers", None), dict):
        header = request.headers.get(HEADER)
    if not isinstance(header, dict):
        return None
    return OccurrenceContext.from_header(header, attempt=(getattr(request, "retries", 0) or 0) + 1)


_CURRENT: ContextVar[OccurrenceContext | None] = ContextVar("scheduler_occurrence", default=None)


@contextmanager
def use_occurrence(context: OccurrenceContext) -> Iterator[OccurrenceContext]:
    """Make ``context`` the current occurrence (set by the task base class while it runs)."""
    token = _CURRENT.set(context)
    try:
        yield context
    finally:
        _CURRENT.reset(token)


def current_occurrence() -> OccurrenceContext | None:
    """The occurrence of the task running here, if it was scheduled by us.

    Inside a task run by ``OccurrenceTask`` this includes the attempt number recorded by the
    claim; otherwise it is read from the Celery request's headers.
    """
    claimed = _CURRENT.get()
    if claimed is not None:
        return claimed
    task = current_task
    if task is None:
        return None
    return context_from_request(task.request)
