"""Clock skew between the beat host and the database.

Slots are compared with the beat's clock, leases and deadlines are written by several hosts:
a host whose clock is off by seconds fires early or late and can take over live leases.
PostgreSQL's ``clock_timestamp()`` is compared with the host clock around the query (the
round trip is split in half); a skew beyond ``SCHEDULER_CLOCK_SKEW_WARN`` is logged as a
warning. SQLite lives in the beat's own process and has no clock of its own: not measured.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import connection

from scheduler_app.clock import Clock

logger = logging.getLogger("scheduler_app.monitoring")


def database_now() -> datetime | None:
    """The database server's clock, or None where it has none of its own (SQLite)."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        row = cursor.fetchone()
    value: datetime = row[0]
    return value


def measure_skew(clock: Clock) -> float | None:
    """Database clock minus host clock, in seconds; None when not measured."""
    before = clock.now()
    db_now = database_now()
    if db_now is None:
        return None
    after = clock.now()
    host = before + (after - before) / 2
    return (db_now - host).total_seconds()


def check_skew(clock: Clock, warn: float) -> float | None:
    """Measure and log: a warning beyond ``warn`` seconds. Returns the skew (None: SQLite)."""
    skew = measure_skew(clock)
    if skew is None:
        logger.debug(
            "clock skew not measured: the database has no clock of its own",
            extra={"action": "beat.skew_not_measured", "vendor": connection.vendor},
        )
    elif abs(skew) > warn:
        logger.warning(
            "the database clock is %.3f s %s this host's clock (limit %.1f s): fix NTP on "
            "this host or on the database server",
            abs(skew),
            "ahead of" if skew > 0 else "behind",
            warn,
            extra={"action": "beat.clock_skew", "skew_seconds": skew},
        )
    return skew
