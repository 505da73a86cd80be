"""The raw limits of the stack, measured in the same run as the schedulers: Celery's
``apply_async``, kombu's ``Producer.publish`` and a batched PostgreSQL upsert."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from bench import report
from bench.scale.env import TASK, broker_kind, celery_app, clear_broker, redis_client


def timed_loop(step: Callable[[int], None], count: int, budget: float) -> dict[str, float]:
    """Run ``step(i)`` ``count`` times or until ``budget`` seconds pass; items per second."""
    begin = time.perf_counter()
    deadline = begin + budget
    done = 0
    while done < count and time.perf_counter() < deadline:
        step(done)
        done += 1
    elapsed = time.perf_counter() - begin
    return {"items": done, "seconds": elapsed, "rate": done / elapsed}


def raw_limits(repeats: int, messages: int, rows: int) -> dict[str, Any]:
    from django.db import connection
    from kombu import Producer, Queue

    app = celery_app()
    noop = app.tasks[TASK]

    def apply_async_loop() -> dict[str, float]:
        return timed_loop(lambda i: noop.apply_async(kwargs={"n": i}), messages, 20)

    def producer_loop() -> dict[str, float]:
        with app.producer_or_acquire() as producer:
            return timed_loop(
                lambda i: noop.apply_async(kwargs={"n": i}, producer=producer), messages, 20
            )

    def kombu_loop() -> dict[str, float]:
        with app.connection_for_write() as conn:
            Queue("bench.raw", routing_key="bench.raw")(conn.default_channel).declare()
            producer = Producer(conn)
            return timed_loop(
                lambda i: producer.publish(
                    {"n": i}, exchange="", routing_key="bench.raw", serializer="json"
                ),
                messages * 3,
                20,
            )

    def pipeline_loop() -> dict[str, float]:
        """LPUSH of a Celery-sized message body (1 KiB), 1,000 per Redis pipeline."""
        client = redis_client()
        body = b"x" * 1024
        batch = 1000

        def step(i: int) -> None:
            with client.pipeline(transaction=False) as pipe:
                for _ in range(batch):
                    pipe.lpush("bench.raw", body)
                pipe.execute()

        result = timed_loop(step, messages * 10 // batch, 20)
        result["rate"] *= batch
        result["items"] *= batch
        return result

    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE IF NOT EXISTS bench_upsert (id uuid PRIMARY KEY, key text UNIQUE,"
            " created_at timestamptz NOT NULL, payload jsonb NOT NULL)"
        )

    def insert_loop() -> dict[str, float]:
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE bench_upsert")
        batch = 1000
        stamp = datetime.now(UTC)

        def step(i: int) -> None:
            ids = [uuid.uuid4() for _ in range(batch)]
            keys = [f"k{i}-{n}" for n in range(batch)]
            with connection.cursor() as cursor:
                cursor.execute(
                    "INSERT INTO bench_upsert (id, key, created_at, payload)"
                    " SELECT u, k, %s, '{\"n\": 1}'::jsonb FROM unnest(%s::uuid[], %s::text[])"
                    " AS t(u, k) ON CONFLICT DO NOTHING",
                    [stamp, ids, keys],
                )

        result = timed_loop(step, rows // batch, 20)  # autocommit: one transaction per batch
        result["rate"] *= batch
        result["items"] *= batch
        return result

    loops = {
        "apply_async": ("plain `apply_async` loop (default producer pool)", apply_async_loop),
        "producer": ("`apply_async` with one kombu `Producer` (one connection)", producer_loop),
        "kombu": ("kombu `Producer.publish` of a small JSON body, one connection", kombu_loop),
        "pipeline": ("Redis pipeline of LPUSHes (1 KiB body, 1,000 per pipeline)", pipeline_loop),
    }
    if broker_kind() == "amqp":  # the pipeline measures Redis, not this run's broker
        del loops["pipeline"]
    loops |= {
        "insert": (
            "PostgreSQL `INSERT ... ON CONFLICT DO NOTHING`, batches of 1,000",
            insert_loop,
        ),
    }
    samples: dict[str, list[float]] = {key: [] for key in loops}
    for _ in range(repeats):
        for key, (_, loop) in loops.items():  # interleaved: drifts hit every row alike
            clear_broker()
            samples[key].append(loop()["rate"])
    clear_broker()
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE bench_upsert")
    return {
        key: {"label": label, "per_second": report.summarize(samples[key], 0)}
        for key, (label, _) in loops.items()
    }
