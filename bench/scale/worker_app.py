"""The Celery app of the worker-overhead figure: ``celery -A bench.scale.worker_app worker``.

The example project's app with the bench's two no-op tasks (``bench.noop``, an
``OccurrenceTask``; ``bench.plain_noop``, a plain ``celery.Task``). It counts the SQL queries
and times the tasks it runs (from the first ``task_prerun`` to the last ``task_postrun``) and
writes them as JSON to ``$BENCH_WORKER_STATS`` when the worker shuts down. With
``$BENCH_WORKER_PROFILE`` set to a path it also profiles (cProfile) from the first task's start
to the shutdown and writes the statistics there (``python -m pstats <path>``).
"""

from __future__ import annotations

import cProfile
import json
import os
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from celery.signals import task_postrun, task_prerun, worker_shutdown

from bench.scale.drivers import RoundTrips
from bench.scale.env import celery_app, setup_django
from bench.scale.worker import shape

setup_django()
app = celery_app()
counter = RoundTrips()
counter.install()
stats: dict[str, Any] = {"executed": 0, "first_start": None, "last_end": None}
_sql_start = [0]
gaps: list[float] = []
statements: Counter[str] = Counter()
"""SQL statements run between the first task's start and the last one's end, by shape."""
profiler = cProfile.Profile() if os.environ.get("BENCH_WORKER_PROFILE") else None


def _record(execute: Callable[..., Any], sql: str, *args: Any) -> Any:
    if stats["first_start"] is None:
        return execute(sql, *args)
    statements[shape(sql)] += 1
    begin = time.perf_counter()
    try:
        return execute(sql, *args)
    finally:  # the time the statement waited on PostgreSQL (the budget per delivery)
        stats["sql_seconds"] = stats.get("sql_seconds", 0.0) + time.perf_counter() - begin


def _install_recorder() -> None:
    from django.db import connection

    connection.execute_wrappers.append(_record)


_install_recorder()


@task_prerun.connect
def _started(**_: Any) -> None:
    if stats["first_start"] is None:
        stats["first_start"] = time.perf_counter()
        _sql_start[0] = counter.sql
        if profiler is not None:
            profiler.enable()


@task_postrun.connect
def _ended(**_: Any) -> None:
    now = time.perf_counter()
    if stats["last_end"] is not None:
        gaps.append(now - stats["last_end"])  # one task: end of the previous to its end
    stats["executed"] += 1
    stats["last_end"] = now
    stats["sql"] = counter.sql - _sql_start[0]


@worker_shutdown.connect
def _write(**_: Any) -> None:
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(os.environ["BENCH_WORKER_PROFILE"])
    target = os.environ.get("BENCH_WORKER_STATS")
    if target:
        Path(target).write_text(json.dumps(stats | {"statements": dict(statements), "gaps": gaps}))
