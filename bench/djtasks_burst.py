"""A burst of 1,000 due slots through each handoff target, in one run (part of ``make bench``).

    DJANGO_SETTINGS_MODULE=bench.settings DATABASE_URL=... CELERY_BROKER_URL=redis://... \
        python -m bench.djtasks_burst [--size 1000] [--repeats 3]

The same ``Ticker`` (one scheduler process), the same 1,000 interval schedules due at once, a
fake clock stepped one interval per repeat: the Celery target publishes to the broker
(``CeleryPublisher``, Redis pipeline), the django.tasks target enqueues django-tasks-db jobs in
the transaction that marks the occurrences. Measured: from the tick's start until every
occurrence is handed off (``dispatched``). Writes ``bench/results/djtasks_burst.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django_tasks_db.models import DBTaskResult  # noqa: E402

from bench import djtasks_tasks  # noqa: E402
from project.celery import app  # noqa: E402
from scheduler_app.beat import handoff_targets  # noqa: E402
from scheduler_app.clock import FakeClock  # noqa: E402
from scheduler_app.conf import SchedulerSettings  # noqa: E402
from scheduler_app.models import Occurrence, OccurrenceState, Schedule  # noqa: E402
from scheduler_app.services import create_schedule  # noqa: E402
from scheduler_app.ticker import Ticker  # noqa: E402

T0 = datetime(2026, 6, 1, 0, 0, tzinfo=UTC)
INTERVAL = 3600
TARGETS = {"celery": "bench.noop", "django_tasks": f"{djtasks_tasks.__name__}.noop"}
RESULTS = Path(__file__).resolve().parent / "results" / "djtasks_burst.json"


def reset() -> None:
    Occurrence.objects.all().delete()
    Schedule.objects.filter(key__startswith="djtburst-").delete()
    DBTaskResult.objects.all().delete()


def create(target: str, size: int) -> None:
    clock = FakeClock(T0 - timedelta(seconds=INTERVAL))
    for n in range(size):
        create_schedule(
            clock=clock,
            task=TARGETS[target],
            kind="interval",
            rule=str(INTERVAL),
            anchor=T0,
            key=f"djtburst-{target}-{n}",
            overlap_policy="allow",
        )


def burst(target: str, size: int, repeat: int) -> float:
    clock = FakeClock(T0 + timedelta(seconds=INTERVAL * repeat))
    ticker = Ticker(
        handoff_targets(app),
        clock=clock,
        settings=SchedulerSettings(BATCH_SIZE=500, PUBLISH_LEASE=3600),
        owner=f"burst-{target}",
    )
    started = time.perf_counter()
    handed = 0
    while handed < size:
        result = ticker.tick()
        handed += result.published
        if not result.created and not result.published:
            raise SystemExit(f"{target}: stuck after {handed} of {size}")
    elapsed = time.perf_counter() - started
    dispatched = Occurrence.objects.filter(
        state=OccurrenceState.DISPATCHED, schedule__key__startswith=f"djtburst-{target}-"
    ).count()
    if dispatched < size * (repeat + 1):
        raise SystemExit(f"{target}: {dispatched} dispatched, expected {size * (repeat + 1)}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    figures: dict[str, Any] = {}
    for target in TARGETS:
        reset()
        create(target, args.size)
        samples = [burst(target, args.size, repeat) for repeat in range(args.repeats)]
        figures[target] = {
            "samples_s": [round(sample, 3) for sample in samples],
            "median_s": round(statistics.median(samples), 3),
            "per_second": round(args.size / statistics.median(samples)),
        }
        print(
            f"{target:>13}: burst of {args.size:,} handed off in median "
            f"{figures[target]['median_s']} s ({figures[target]['per_second']:,}/s)",
            flush=True,
        )
    reset()
    payload = {
        "size": args.size,
        "repeats": args.repeats,
        "database": connection.vendor,
        "broker": os.environ.get("CELERY_BROKER_URL", "").split("://")[0],
        "targets": figures,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
