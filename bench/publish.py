"""Publishing throughput: ``send_task`` per occurrence vs. the Redis pipeline path.

Both go through ``CeleryPublisher.publish`` with the same occurrence-like rows (unsaved
``Occurrence`` objects: no database), to a queue of their own on the Redis db given, which is
emptied after every run (the rest of the db is left alone).

    python -m bench.publish [--redis redis://127.0.0.1:6379/12] [--sizes 1000,10000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

QUEUE = "bench-publish"


def occurrences(count: int) -> list[Any]:
    from scheduler_app.models import Occurrence, Schedule, ScheduleVersion

    version = ScheduleVersion(version=1, definition={"objective": "bench"})
    schedule = Schedule(id=uuid.uuid4(), options={})  # in memory: publishing reads its options
    now = datetime.now(UTC)
    rows = []
    for n in range(count):
        slot = now - timedelta(seconds=n % 60)
        rows.append(
            Occurrence(
                id=uuid.uuid4(),
                schedule=schedule,
                schedule_version=version,
                trigger="scheduled",
                scheduled_for=slot,
                window_start=slot,
                window_end=slot + timedelta(minutes=1),
                timezone="Europe/Riga",
                idempotency_key=f"bench:{n}:{slot.isoformat()}",
                task="bench.noop",
                kwargs={"n": n, "report": "daily", "city": "Rīga"},
                not_before=slot,
                deadline_at=now + timedelta(hours=1),
                created_at=slot,
            )
        )
    return rows


def rate(publisher: Any, rows: list[Any], client: Any) -> tuple[float, float]:
    """Messages per second of wall time, and per second of this process's CPU time (the
    second is steadier on a busy machine; it leaves out Redis and the network)."""
    client.delete(QUEUE)
    begin, cpu = time.perf_counter(), time.process_time()
    published = publisher.publish(rows)
    elapsed, cpu = time.perf_counter() - begin, time.process_time() - cpu
    queued = client.llen(QUEUE)
    client.delete(QUEUE)
    if len(published) != len(rows) or queued != len(rows):
        raise AssertionError(f"published {len(published)}, queued {queued}, expected {len(rows)}")
    return len(rows) / elapsed, len(rows) / max(cpu, 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/12")
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    import django

    django.setup()
    import redis
    from celery import Celery

    from scheduler_app.publishing import CeleryPublisher

    app = Celery("bench-publish", broker=options.redis, set_as_current=False)
    app.conf.task_default_queue = QUEUE
    client = redis.Redis.from_url(options.redis)
    paths = {
        "send_task": CeleryPublisher(app, pipeline=False),
        "pipeline": CeleryPublisher(app, pipeline=True),
    }
    rate(paths["send_task"], occurrences(10), client)  # connect and declare before timing
    print(f"{'size':>7} {'path':<10} {'msgs/s wall':>12} {'msgs/CPU-s':>11}   wall runs")
    for size in [int(part) for part in options.sizes.split(",")]:
        rows = occurrences(size)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in paths}
        for _ in range(options.repeats):
            for name, publisher in paths.items():  # interleaved: drifts hit both alike
                samples[name].append(rate(publisher, rows, client))
        for name, values in samples.items():
            wall = statistics.median(value[0] for value in values)
            cpu = statistics.median(value[1] for value in values)
            runs = ", ".join(f"{value[0]:,.0f}" for value in values)
            print(f"{size:>7} {name:<10} {wall:>12,.0f} {cpu:>11,.0f}   {runs}")
    app.close()


if __name__ == "__main__":
    main()
