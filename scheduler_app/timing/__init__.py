"""The time engine: pure functions from timing rules to UTC instants.

Imports neither Django nor Celery and never reads the clock: every instant is passed in.

    >>> from datetime import datetime, UTC
    >>> timing = build_timing(kind="cron", rule="30 9 * * 1-5", timezone="Europe/Riga")
    >>> next_after(timing, datetime(2026, 3, 27, 12, 0, tzinfo=UTC))
    datetime.datetime(2026, 3, 30, 6, 30, tzinfo=datetime.timezone.utc)
"""

from scheduler_app.timing.backward import first_slot, first_slot_from, previous_slot
from scheduler_app.timing.cron import CronExpr, parse_cron
from scheduler_app.timing.describe import describe
from scheduler_app.timing.durations import format_duration, parse_duration
from scheduler_app.timing.engine import (
    SearchExhausted,
    iter_annotated,
    iter_between,
    iter_slots,
    next_after,
    slots_between,
)
from scheduler_app.timing.legacy import canonical_zone
from scheduler_app.timing.rules import Kind, Timing, build_timing
from scheduler_app.timing.zones import (
    TICK,
    Ambiguous,
    DstPolicy,
    Nonexistent,
    ensure_aware,
    get_zone,
)

__all__ = [
    "TICK",
    "Ambiguous",
    "CronExpr",
    "DstPolicy",
    "Kind",
    "Nonexistent",
    "SearchExhausted",
    "Timing",
    "build_timing",
    "canonical_zone",
    "describe",
    "ensure_aware",
    "first_slot",
    "first_slot_from",
    "format_duration",
    "get_zone",
    "iter_annotated",
    "iter_between",
    "iter_slots",
    "next_after",
    "parse_cron",
    "parse_duration",
    "previous_slot",
    "slots_between",
]
