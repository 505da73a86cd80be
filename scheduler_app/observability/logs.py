"""Readable one-line log messages, and a JSON formatter for log pipelines.

The scheduler logs an event as a short message plus structured ``extra`` fields (``action``,
ids, counts). Celery's default formatter prints only the message, so "tick" alone told a
reader nothing. ``install()`` (run by the app's ``ready()``) makes every record of a
``scheduler_app.*`` logger render its ids and counts into the message, whatever formatter
prints it::

    schedule created: schedule 3f0c...
    tick: 12 occurrence(s) created, 12 published in 14 ms

while the fields stay on the record for :class:`JsonFormatter`, which writes one JSON object
per line with a stable ``action`` key and the schedule / occurrence / attempt ids, never a
payload. Use it in ``LOGGING``::

    "formatters": {"json": {"()": "scheduler_app.observability.logs.JsonFormatter"}}
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from scheduler_app.observability.tracing import current_ids

PREFIX = "scheduler_app"

IDS = ("schedule_id", "occurrence_id", "attempt_id", "attempt", "version", "tenant", "owner")
"""Fields a person needs to find the row, rendered first, in this order."""
NEVER = frozenset({"payload", "kwargs", "args", "result", "headers"})
"""Fields never written: a payload may carry personal data or secrets."""
STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "rendered",
    "taskName",
}
"""Attributes every LogRecord has; anything else on a record came from ``extra``."""

TEMPLATES: Mapping[str, str] = {
    "beat.tick": (
        "{occurrences_created} occurrence(s) created, {published} published in {duration_ms} ms"
    ),
    "reconcile.done": "{_counts}",
    "schedule.created": "schedule {schedule_id}",
    "schedule.parked": "schedule {schedule_id} parked: {error}",
    "materialize.conflict": "{count} occurrence(s) already existed",
    "outbox.publish_failed": "{pending} occurrence(s) still pending",
}
"""Phrases for frequent actions; any other action gets ``key=value`` pairs."""
TRACE_FIELDS = ("trace_id", "span_id")
"""The OpenTelemetry ids a record carries while a span is active (JSON output only: the
one-line message leaves them out)."""


def extras(record: logging.LogRecord) -> dict[str, Any]:
    """The ``extra`` fields of ``record`` (payload-like fields removed)."""
    return {
        key: value
        for key, value in vars(record).items()
        if key not in STANDARD and key not in NEVER and not key.startswith("_")
    }


def render(message: str, fields: Mapping[str, Any]) -> str:
    """``message`` followed by what ``fields`` say, in words when the action is known."""
    fields = {
        key: value
        for key, value in fields.items()
        if value not in (None, "") and key not in TRACE_FIELDS
    }
    action = fields.pop("action", None)
    if not fields:
        return message
    template = TEMPLATES.get(str(action)) if action else None
    if template is not None:
        counts = ", ".join(f"{value} {key}" for key, value in fields.items() if value)
        try:
            detail = template.format(_counts=counts or "nothing", **fields)
        except (KeyError, IndexError, ValueError):
            detail = _pairs(fields)
    else:
        detail = _pairs(fields)
    return f"{message}: {detail}" if detail else message


def _pairs(fields: Mapping[str, Any]) -> str:
    first = [key for key in IDS if key in fields]
    rest = sorted(key for key in fields if key not in IDS)
    return " ".join(f"{key}={_short(fields[key])}" for key in first + rest)


def _short(value: Any, limit: int = 200) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class SchedulerLogRecord(logging.LogRecord):
    """A record of a ``scheduler_app.*`` logger: ``getMessage()`` includes the extras."""

    def getMessage(self) -> str:
        return render(self.bare_message(), extras(self))

    def bare_message(self) -> str:
        return super().getMessage()


_installed: Callable[..., logging.LogRecord] | None = None


def install() -> None:
    """Make ``scheduler_app.*`` records render their extras; other records are untouched.

    Every record made while an OpenTelemetry span is active gets its ``trace_id`` and
    ``span_id`` (hex), which ``JsonFormatter`` writes. Chains to the record factory in place
    (installing twice is a no-op)."""
    global _installed
    current = logging.getLogRecordFactory()
    if _installed is not None and current is _installed:
        return
    previous = current

    def factory(name: str, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(name, *args, **kwargs)
        ids = current_ids()
        if ids is not None and not hasattr(record, "trace_id"):
            record.trace_id, record.span_id = ids
        if (name == PREFIX or name.startswith(PREFIX + ".")) and type(record) is logging.LogRecord:
            record.__class__ = SchedulerLogRecord
        return record

    _installed = factory
    logging.setLogRecordFactory(factory)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, ``action``, the bare message, the ids
    and counts from ``extra``, and the exception if any. Payloads are never written."""

    def format(self, record: logging.LogRecord) -> str:
        bare = getattr(record, "bare_message", None)
        message = bare() if callable(bare) else record.getMessage()
        fields = extras(record)
        document: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "action": fields.pop("action", None),
            "message": message,
        }
        for key in IDS:
            if key in fields:
                document[key] = fields.pop(key)
        document.update(fields)
        if record.exc_info:
            document["exception"] = self.formatException(record.exc_info)
        return json.dumps(document, default=str, ensure_ascii=False)
