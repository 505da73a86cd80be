"""One driver per scheduler: ``ours``, ``redbeat`` (celery-redbeat), ``dcb`` (django-celery-beat).

Each driver module has ``build(app)`` (the beat scheduler class, as ``celery beat`` builds it)
and ``burst(burst, at, budget)`` (the first ``burst`` schedules due at ``at``; publish them all
to Redis, timed). ``startup_child`` below is the start-up / idle-tick sample every driver
shares: it runs in a fresh process.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bench.scale import T0
from bench.scale.env import celery_app, rss, setup_django

DRIVERS = ("ours", "redbeat", "dcb")


def driver(which: str) -> Any:
    if which not in DRIVERS:
        raise ValueError(f"unknown scheduler {which!r}: expected one of {', '.join(DRIVERS)}")
    return importlib.import_module(f"bench.scale.drivers.{which}")


class RoundTrips:
    """Counts SQL queries (Django) and Redis round trips (a command, or a pipeline) made
    while active. Installed once per process; ``window()`` reads the counts of a block."""

    def __init__(self) -> None:
        self.sql = 0
        self.redis = 0
        self._installed = False

    def install(self) -> None:
        if self._installed:
            return
        import redis.client
        from django.db import connection

        counter = self

        def counted(method: Callable[..., Any], field: str) -> Callable[..., Any]:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                setattr(counter, field, getattr(counter, field) + 1)
                return method(*args, **kwargs)

            return wrapper

        redis.client.Redis.execute_command = counted(  # type: ignore[method-assign]
            redis.client.Redis.execute_command, "redis"
        )
        redis.client.Pipeline.execute = counted(  # type: ignore[method-assign]
            redis.client.Pipeline.execute, "redis"
        )

        def sql_wrapper(execute: Callable[..., Any], *args: Any) -> Any:
            counter.sql += 1
            return execute(*args)

        connection.execute_wrappers.append(sql_wrapper)
        self._installed = True

    @contextmanager
    def window(self) -> Iterator[dict[str, int]]:
        counts = {"sql": 0, "redis": 0}
        sql, redis_ = self.sql, self.redis
        try:
            yield counts
        finally:
            counts["sql"], counts["redis"] = self.sql - sql, self.redis - redis_


WARMUP_TICKS = 10
"""Idle ticks run (not measured) before the measured ones, by every scheduler: a running beat's
steady state. Ours plans its probe on each of its first ticks until PostgreSQL keeps the plan
(psycopg prepares it after ``prepare_threshold`` uses, then PostgreSQL plans it five more
times before it settles on a generic plan)."""


def startup_child(which: str, ticks: int) -> dict[str, Any]:
    """Inside a fresh process: build the scheduler, first tick, RSS, ``WARMUP_TICKS``
    unmeasured idle ticks, then ``ticks`` idle ticks (wall time, SQL queries and Redis round
    trips of each)."""
    setup_django()
    app = celery_app()
    module = driver(which)
    counter = RoundTrips()
    counter.install()
    if hasattr(module, "prepare"):
        module.prepare()  # untimed: what the previous process may have left behind
    ready = time.perf_counter()
    scheduler = module.build(app)
    built = time.perf_counter()
    first = scheduler.tick()
    ticked = time.perf_counter()
    done_at = time.time()
    memory = rss()
    seconds, queries, redis_calls = [], [], []
    for _ in range(WARMUP_TICKS):
        scheduler.tick()
    for _ in range(ticks):
        with counter.window() as counts:
            begin = time.perf_counter()
            scheduler.tick()
            seconds.append(time.perf_counter() - begin)
        queries.append(counts["sql"])
        redis_calls.append(counts["redis"])
    bare = module.bare_ticks(scheduler, ticks) if hasattr(module, "bare_ticks") else []
    module.close(scheduler)
    return {
        "import_setup_s": ready - T0,
        "construct_s": built - ready,
        "first_tick_s": ticked - built,
        "startup_s": ticked - ready,
        "first_tick_sleep": first,
        "first_tick_done_at": done_at,
        **memory,
        "idle_tick_ms": [s * 1000 for s in seconds],
        "idle_tick_queries": queries,
        "idle_tick_redis": redis_calls,
        "ticker_idle_tick_ms": bare,
    }
