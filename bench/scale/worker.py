"""Worker overhead: one real ``celery worker --pool solo`` process (one worker process, tasks in
its main thread) executing no-op tasks: as ``OccurrenceTask`` occurrences published by our beat,
and as a plain Celery task published with ``apply_async``. Executed per second (first task
start to last task end) and SQL queries per task (the result backend's included: the project
stores results with ``django-db`` for both)."""

from __future__ import annotations

import functools
import json
import os
import re
import statistics
import time
from datetime import datetime
from typing import Any

from bench import report
from bench.scale.env import (
    PLAIN_TASK,
    QUEUE,
    Child,
    broker_kind,
    celery_app,
    celery_command,
    clear_broker,
    due_instant,
    log_path,
    queued,
    redis_client,
)
from bench.scale.workload import create_schedules, set_due, truncate_all

KINDS = {"occurrence": "`OccurrenceTask` (scheduled occurrence)", "plain": "plain Celery task"}


TABLES = re.compile(r'\b(?:FROM|INTO|UPDATE|JOIN)\s+"?([\w.]+)"?', re.IGNORECASE)


@functools.lru_cache(maxsize=1024)
def shape(sql: str) -> str:
    """A statement's verb and tables, without values: ``SELECT scheduler_app_occurrence``.

    Cached by text: the worker's statements are the same text on every task, and reading a
    5 kB claim with a regular expression on every task (0.36 ms) was the bench's cost, not
    the worker's."""
    verb = sql.split(None, 1)[0].upper() if sql.strip() else "?"
    tables = dict.fromkeys(TABLES.findall(sql))
    return " ".join([verb, ", ".join(tables)]).strip()


def enqueue_occurrences(count: int, at: datetime) -> int:
    """``count`` occurrences due at ``at``, published by our engine as the beat does."""
    from scheduler_app.clock import FakeClock
    from scheduler_app.publishing import CeleryPublisher
    from scheduler_app.ticker import Ticker

    set_due(count, at)
    ticker = Ticker(CeleryPublisher(celery_app()), clock=FakeClock(at), owner="bench-worker")
    published = 0
    for _ in range(count):
        result = ticker.tick()
        published += result.published
        if published >= count or not (result.published or result.created):
            break
    return published


def enqueue_plain(count: int) -> int:
    clear_broker()
    app = celery_app()
    task = app.tasks[PLAIN_TASK]
    with app.producer_or_acquire() as producer:
        for index in range(count):
            task.apply_async(kwargs={"n": index}, producer=producer)
    return count


def drained(sent: int) -> bool:
    """Every message taken and its task done: on Redis, nothing left unacknowledged
    (``acks_late``: acked after the task ran); on RabbitMQ, a stored result for each (a
    database count: polling the queue would open a broker connection every time)."""
    if broker_kind() == "redis":
        return queued() == 0 and int(redis_client().hlen("unacked")) == 0
    from django_celery_results.models import TaskResult

    return TaskResult.objects.count() >= sent


def forget_results() -> None:
    from django.db import connection
    from django_celery_results.models import TaskResult

    with connection.cursor() as cursor:
        cursor.execute(f'TRUNCATE "{TaskResult._meta.db_table}"')


def worker_run(kind: str, count: int, at: datetime, budget: float) -> dict[str, Any]:
    from scheduler_app.models import Occurrence, OccurrenceState

    forget_results()
    sent = enqueue_occurrences(count, at) if kind == "occurrence" else enqueue_plain(count)
    stats_path = log_path(f"worker-{kind}-stats").with_suffix(".json")
    worker = Child(
        f"worker-{kind}",
        celery_command(
            "-A",
            "bench.scale.worker_app",
            "worker",
            "--pool",
            "solo",
            "--queues",
            QUEUE,
            "--loglevel",
            os.environ.get("BENCH_WORKER_LOGLEVEL", "WARNING"),
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--hostname",
            f"bench-{kind}@%h",
        ),
        env={"BENCH_WORKER_STATS": str(stats_path), **profile_env(kind)},
    )
    deadline = time.perf_counter() + budget
    try:
        while not drained(sent) and time.perf_counter() < deadline:
            if worker.process.poll() is not None:
                raise SystemExit(f"worker exited:\n{worker.stderr_tail()}")
            time.sleep(0.1)
        finished = drained(sent)
    finally:
        worker.stop()
    if not stats_path.exists():
        raise SystemExit(f"worker wrote no stats:\n{worker.stderr_tail()}")
    stats = json.loads(stats_path.read_text())
    executed = stats["executed"]
    active = (stats["last_end"] or 0) - (stats["first_start"] or 0)
    result: dict[str, Any] = {
        "kind": kind,
        "sent": sent,
        "executed": executed,
        "finished": finished and executed >= sent,
        "seconds": active,
        "per_second": executed / active if active > 0 else 0.0,
        "ms_per_task": active / executed * 1000 if executed else None,
        "queries_per_task": stats.get("sql", 0) / executed if executed else None,
        "sql_ms_per_task": stats.get("sql_seconds", 0.0) / executed * 1000 if executed else None,
        **gap_figures(stats.get("gaps") or []),
        "statements_per_task": {
            text: round(count / executed, 2)
            for text, count in sorted(stats.get("statements", {}).items(), key=lambda kv: -kv[1])
        }
        if executed
        else {},
        "log": str(worker.err_path),
    }
    if kind == "occurrence":
        result["succeeded"] = Occurrence.objects.filter(state=OccurrenceState.SUCCEEDED).count()
    return result


def profile_env(kind: str) -> dict[str, str]:
    """``BENCH_WORKER_PROFILE=<path>``: each worker writes its cProfile to ``<path>.<kind>``."""
    path = os.environ.get("BENCH_WORKER_PROFILE")
    return {"BENCH_WORKER_PROFILE": f"{path}.{kind}"} if path else {}


def gap_figures(gaps: list[float]) -> dict[str, float]:
    """From the time between consecutive task ends: the median (a rate that a stall of the
    machine or the broker does not move) and the longest pause, in ms."""
    if not gaps:
        return {}
    return {
        "median_gap_ms": statistics.median(gaps) * 1000,
        "max_gap_ms": max(gaps) * 1000,
    }


def worker_samples(repeats: int, count: int, budget: float) -> dict[str, Any]:
    at = due_instant()
    print(f"  worker: creating {count:,} schedules ...", flush=True)
    create_schedules(count, at, dcb=False)
    runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    for _ in range(repeats):
        for kind in KINDS:  # interleaved: drifts hit both alike
            run = worker_run(kind, count, at, budget)
            runs[kind].append(run)
            print(
                f"  worker, {kind}: {run['executed']:,} in {run['seconds']:.2f} s ="
                f" {run['per_second']:,.0f}/s, {run['queries_per_task'] or 0:.2f} queries/task"
                + (f", {run['succeeded']:,} succeeded" if "succeeded" in run else ""),
                flush=True,
            )
    truncate_all()
    summary: dict[str, Any] = {"tasks": count, "budget_s": budget, "runs": runs}
    summary["finished"] = all(r["finished"] for rs in runs.values() for r in rs)
    for kind, kind_runs in runs.items():
        done = [r for r in kind_runs if r["executed"]]
        if not done:
            continue
        summary[kind] = {
            "per_second": report.summarize([r["per_second"] for r in done], 1),
            "ms_per_task": report.summarize([r["ms_per_task"] for r in done], 3),
            "queries_per_task": report.summarize([r["queries_per_task"] for r in done], 2),
            "sql_ms_per_task": report.summarize([r["sql_ms_per_task"] or 0.0 for r in done], 3),
        }
        for key in ("median_gap_ms", "max_gap_ms"):
            if all(key in r for r in done):
                summary[kind][key] = report.summarize([r[key] for r in done], 3)
    summary["statements"] = {
        kind: kind_runs[-1].get("statements_per_task", {}) for kind, kind_runs in runs.items()
    }  # of the last run: statements per task by verb and table
    if "occurrence" in summary and "plain" in summary:
        occurrence, plain = summary["occurrence"], summary["plain"]
        # The median time per task when both have it: a stall does not move it.
        basis = (
            "median_gap_ms"
            if "median_gap_ms" in occurrence and "median_gap_ms" in plain
            else "ms_per_task"
        )
        summary["overhead_basis"] = basis
        summary["overhead_ms"] = round(occurrence[basis]["median"] - plain[basis]["median"], 3)
        summary["overhead_queries"] = round(
            summary["occurrence"]["queries_per_task"]["median"]
            - summary["plain"]["queries_per_task"]["median"],
            2,
        )
    return summary
