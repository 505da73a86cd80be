"""Sentry Crons check-ins per occurrence, when sentry-sdk is installed (the ``sentry`` extra),
initialised in the process, and ``SCHEDULER_SENTRY_CRONS = True``.

Each occurrence is one check-in: ``in_progress`` when an attempt starts, then ``ok`` or
``error`` when it ends (after the last retry). The check-in id is the occurrence's UUID, so
every attempt, on whichever worker, updates the same check-in. The monitor is upserted by its
config: the slug is the schedule's tenant and key with a digest of both (or its id), the
schedule a crontab for cron rules and an interval otherwise (rules without a fixed period send
no config), the zone the schedule's.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from datetime import timedelta
from functools import partial
from typing import Any

from django.db import transaction

from scheduler_app.conf import get_settings

sentry_sdk: Any
capture_checkin: Any
try:
    import sentry_sdk
    from sentry_sdk.crons import capture_checkin
except ImportError:  # pragma: no cover - depends on the installed extras
    sentry_sdk = None
    capture_checkin = None

logger = logging.getLogger("scheduler_app.sentry")

IN_PROGRESS = "in_progress"
OK = "ok"
ERROR = "error"
SLUG_LENGTH = 50
"""Sentry's longest monitor slug."""
DIGEST_LENGTH = 16
"""Hex digits of the tenant-and-key digest ending every keyed slug (64 bits: no schedule can
be given a key that lands on another's monitor)."""
UNITS = (("week", 604_800), ("day", 86_400), ("hour", 3_600), ("minute", 60))


def enabled() -> bool:
    if sentry_sdk is None or not get_settings().SENTRY_CRONS:
        return False
    return bool(sentry_sdk.get_client().is_active())


def slug(schedule: Any) -> str:
    """The monitor slug, one per schedule: ``<tenant>-<key>`` in Sentry's alphabet, cut to fit,
    then ``-`` and a digest of the exact tenant and key (so two schedules whose keys read the
    same in that alphabet, or that belong to two tenants, never share a monitor); the
    schedule's id when it has no key."""
    key = str(schedule.key or "")
    if not key:
        return str(schedule.pk)[:SLUG_LENGTH]
    tenant = str(getattr(schedule, "tenant", "") or "")
    exact = json.dumps([tenant, key]).encode()  # unambiguous: ("a-b", "c") is not ("a", "b-c")
    digest = hashlib.sha256(exact).hexdigest()[:DIGEST_LENGTH]
    readable = f"{tenant}-{key}" if tenant else key
    text = re.sub(r"[^a-z0-9_-]+", "-", readable.lower()).strip("-")
    text = text[: SLUG_LENGTH - DIGEST_LENGTH - 1].rstrip("-")
    return f"{text}-{digest}" if text else digest


def monitor_config(schedule: Any, occurrence: Any) -> dict[str, Any] | None:
    """The monitor's schedule, zone and margin, from the schedule (None: no fixed period)."""
    if schedule.kind == "cron":
        period: dict[str, Any] = {"type": "crontab", "value": str(schedule.rule)}
    else:
        seconds = _period(schedule, occurrence)
        if seconds is None:
            return None
        period = _interval(seconds)
    margin = max(1, -(-int(schedule.max_lateness or 0) // 60))
    config: dict[str, Any] = {
        "schedule": period,
        "timezone": str(schedule.timezone),
        "checkin_margin": margin,
    }
    if schedule.deadline:
        config["max_runtime"] = max(1, -(-int(schedule.deadline) // 60))
    return config


def _period(schedule: Any, occurrence: Any) -> int | None:
    if schedule.kind == "interval":
        try:
            return int(float(schedule.rule))
        except ValueError:
            return None
    window: timedelta = occurrence.window_end - occurrence.window_start
    seconds = int(window.total_seconds())
    return seconds if seconds > 0 else None


def _interval(seconds: int) -> dict[str, Any]:
    for unit, size in UNITS:
        if seconds >= size and seconds % size == 0:
            return {"type": "interval", "value": seconds // size, "unit": unit}
    return {"type": "interval", "value": max(1, -(-seconds // 60)), "unit": "minute"}


def check_in(occurrence: Any, status: str) -> None:
    """Send one check-in for ``occurrence`` after the current transaction commits."""
    if not enabled():
        return
    schedule = occurrence.schedule
    send = partial(
        capture_checkin,
        monitor_slug=slug(schedule),
        check_in_id=occurrence.pk.hex,
        status=status,
        monitor_config=monitor_config(schedule, occurrence),
    )
    transaction.on_commit(send)
