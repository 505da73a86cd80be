"""Example tasks used by the demo (and by the end-to-end tests)."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any

from celery import shared_task

from scheduler_app.context import current_occurrence

logger = logging.getLogger(__name__)


@shared_task(name="demo.ping")
def ping(**kwargs: object) -> str:
    logger.info("demo.ping ran with %s", kwargs)
    return "pong"


@shared_task(name="demo.record_context")
def record_context(record_to: str | None = None, **kwargs: object) -> dict[str, Any] | None:
    """Return the occurrence context this run sees (stored by the result backend).

    With ``record_to`` (a file path) every execution also appends one JSON line to that file,
    so a caller can count executions.
    """
    occurrence = current_occurrence()
    seen = json.loads(json.dumps(asdict(occurrence), default=str)) if occurrence else None
    logger.info("demo.record_context ran with %s in %s", kwargs, seen)
    if record_to:
        with Path(record_to).open("a", encoding="utf-8") as out:
            out.write(json.dumps({"kwargs": kwargs, "occurrence": seen}) + "\n")
    return seen
