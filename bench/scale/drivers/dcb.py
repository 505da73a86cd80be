"""django-celery-beat 2.9.0: its ``DatabaseScheduler``, driven the way ``celery beat`` drives it.

Its rows are made by ``bench.scale.workload`` next to ours (an rrule row becomes the equivalent
crontab row: django-celery-beat has no rrule; crontab rows carry their zone).
"""

from __future__ import annotations

import copy
import time
from datetime import datetime
from typing import Any

from bench.scale.env import BudgetExceeded, budget, celery_app, queued
from bench.scale.workload import set_due

LABEL = "django-celery-beat 2.9.0"


def build(app: Any) -> Any:
    from django_celery_beat.schedulers import DatabaseScheduler

    return DatabaseScheduler(app=app)


def close(scheduler: Any) -> None:
    scheduler._finalize.cancel()  # no sync at exit: nothing was sent


def burst(size: int, at: datetime, seconds: float) -> dict[str, Any]:
    """Build the scheduler and fill its heap (not timed: a running beat did it at start-up),
    then ``tick()``, sleeping what it returns, until every due entry is sent."""
    from django_celery_beat.schedulers import DatabaseScheduler

    sent: set[str] = set()

    class Counting(DatabaseScheduler):
        def apply_entry(self, entry: Any, producer: Any = None) -> None:
            sent.add(entry.name)
            super().apply_entry(entry, producer=producer)

    set_due(size, at)
    build_begin = time.perf_counter()
    # Building the scheduler loads every enabled row: at large sizes that alone can outlast
    # the budget (and grow to gigabytes), so it is bounded by the same budget.
    try:
        with budget(seconds):
            scheduler = Counting(app=celery_app())
            # What tick() does first when it has no heap (at start-up in a running beat).
            scheduler.old_schedulers = copy.copy(scheduler.schedule)
            scheduler.populate_heap()
            _ = scheduler.producer  # connect before the clock starts
    except BudgetExceeded:
        return {
            "finished": False,
            "seconds": seconds,
            "sent": 0,
            "queued": 0,
            "ticks": 0,
            "startup_s": time.perf_counter() - build_begin,
            "build_unfinished": True,
        }
    begin = time.perf_counter()
    deadline = begin + seconds
    ticks = 0
    while len(sent) < size and time.perf_counter() < deadline:
        interval = scheduler.tick()
        ticks += 1
        if interval and interval > 0:
            time.sleep(min(interval, max(deadline - time.perf_counter(), 0)))
    elapsed = time.perf_counter() - begin
    close(scheduler)
    return {
        "finished": len(sent) >= size,
        "seconds": elapsed,
        "sent": len(sent),
        "queued": queued(),
        "ticks": ticks,
        "startup_s": begin - build_begin,
    }
