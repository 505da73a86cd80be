"""Publishing throughput on RabbitMQ: ``send_task`` per occurrence vs. the AMQP batch path, both
with publisher confirms.

Both go through ``CeleryPublisher.publish`` with the same occurrence-like rows (unsaved
``Occurrence`` objects: no database), to a queue of their own (durable, persistent messages:
Celery's defaults), purged after every run and deleted at the end. The Celery app sets kombu's
``confirm_publish`` transport option, so ``send_task`` waits for the broker's confirm of every
message; the batch path opens its own confirm-mode channel and waits once per batch.
``send_task`` without confirms is shown for reference: it is faster and counts a message the
broker then drops as published.

    python -m bench.amqp_publish [--amqp amqp://guest:guest@127.0.0.1:5672//]
        [--sizes 1000,10000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
from typing import Any

from bench.publish import occurrences  # the same rows as the Redis publish bench


class Queue:
    """The bench queue, read and purged through a connection of its own."""

    def __init__(self, url: str, name: str) -> None:
        from kombu import Connection

        self.name = name
        self.connection = Connection(url)
        self.channel = self.connection.default_channel

    def count(self) -> int:
        return int(self.channel.queue_declare(self.name, passive=True).message_count)

    def purge(self) -> None:
        self.channel.queue_purge(self.name)

    def delete(self) -> None:
        self.channel.queue_delete(self.name)
        self.channel.exchange_delete(self.name)
        self.connection.release()


def rate(publisher: Any, rows: list[Any], queue: Queue, *, confirmed: bool) -> tuple[float, float]:
    """Messages per second of wall time, and per second of this process's CPU time. A
    confirmed message is in the queue when ``publish`` returns; an unconfirmed one may still
    be on its way (not timed)."""
    queue.purge()
    begin, cpu = time.perf_counter(), time.process_time()
    published = publisher.publish(rows)
    elapsed, cpu = time.perf_counter() - begin, time.process_time() - cpu
    queued = queue.count()
    deadline = time.monotonic() + 10
    while not confirmed and queued < len(rows) and time.monotonic() < deadline:
        time.sleep(0.05)
        queued = queue.count()
    queue.purge()
    if len(published) != len(rows) or queued != len(rows):
        raise AssertionError(f"published {len(published)}, queued {queued}, expected {len(rows)}")
    return len(rows) / elapsed, len(rows) / max(cpu, 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--amqp", default="amqp://guest:guest@127.0.0.1:5672//")
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    import django

    django.setup()
    from celery import Celery

    from scheduler_app.publishing import CeleryPublisher

    name = f"bench-amqp-publish-{uuid.uuid4().hex[:8]}"
    confirmed = Celery("bench-amqp", broker=options.amqp, set_as_current=False)
    confirmed.conf.broker_transport_options = {"confirm_publish": True}
    unconfirmed = Celery("bench-amqp-nc", broker=options.amqp, set_as_current=False)
    for app in (confirmed, unconfirmed):
        app.conf.task_default_queue = name
    paths = {
        "send_task+confirms": CeleryPublisher(confirmed, pipeline=False),
        "batch+confirms": CeleryPublisher(confirmed),
        "send_task, no confirms": CeleryPublisher(unconfirmed, pipeline=False),
    }
    queue = None
    try:
        for publisher in paths.values():  # connect and declare before timing
            publisher.publish(occurrences(10))
        queue = Queue(options.amqp, name)
        print(f"{'size':>7} {'path':<23} {'msgs/s wall':>12} {'msgs/CPU-s':>11}   wall runs")
        for size in [int(part) for part in options.sizes.split(",")]:
            rows = occurrences(size)
            samples: dict[str, list[tuple[float, float]]] = {name: [] for name in paths}
            for _ in range(options.repeats):
                for path, publisher in paths.items():  # interleaved: drifts hit all alike
                    confirms = "no confirms" not in path
                    samples[path].append(rate(publisher, rows, queue, confirmed=confirms))
            for path, values in samples.items():
                wall = statistics.median(value[0] for value in values)
                cpu = statistics.median(value[1] for value in values)
                runs = ", ".join(f"{value[0]:,.0f}" for value in values)
                print(f"{size:>7} {path:<23} {wall:>12,.0f} {cpu:>11,.0f}   {runs}")
    finally:
        if queue is not None:
            queue.delete()
        confirmed.close()
        unconfirmed.close()


if __name__ == "__main__":
    main()
