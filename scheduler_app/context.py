"""The occurrence context a scheduled task sees: one frozen object, read from the message."""

from __future__ import annotations

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

    def remaining(self, now: datetime) -> float | None:
        """Seconds left before the deadline (None when there is no deadline)."""
        if self.deadline_at is None:
            return None
        return (self.deadline_at - now).total_seconds()


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


def current_occurrence() -> OccurrenceContext | None:
    """The occurrence of the task running in this worker thread, if it was scheduled by us."""
    task = current_task
    if task is None:
        return None
    return context_from_request(task.request)
