"""Helpers for the end-to-end tests: real ``celery worker`` processes on Redis, a beat thread.

The workers run ``celery -A project worker`` in subprocesses, on the pytest-django test
database (the tests are transactional, so what they write is committed and visible to the
workers) and on a queue of their own. PostgreSQL only: pytest-django's SQLite test database
lives in memory, which another process cannot open.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery
from django.db import connection

from scheduler_app.clock import SystemClock
from scheduler_app.conf import SchedulerSettings
from scheduler_app.models import Occurrence
from scheduler_app.publishing import CeleryPublisher
from scheduler_app.ticker import Ticker

REPO_ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60.0
E2E_TASKS = "project.demo.e2e_tasks"


def database_url() -> str:
    """The test database pytest-django created, as a URL for the worker process."""
    db = connection.settings_dict
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"


@dataclass
class Worker:
    """One ``celery worker`` subprocess and its log file."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path
    killed: bool = False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: no warm shutdown, no ack, no outcome recorded."""
        self.killed = True
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()  # warm shutdown: running tasks finish
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


@dataclass
class Workers:
    """Starts workers for one test and stops every one of them at the end."""

    redis_url: str
    queue: str
    directory: Path
    started: list[Worker] = field(default_factory=list)

    def start(
        self,
        *,
        pool: str = "threads",
        concurrency: int = 4,
        env: dict[str, str] | None = None,
        ready: bool = True,
    ) -> Worker:
        name = f"w{len(self.started) + 1}"
        log_path = self.directory / f"worker-{name}.log"
        environment = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": self.redis_url,
            "PROJECT_VAR_DIR": str(self.directory / "var"),
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "project",
                    "worker",
                    f"--pool={pool}",
                    f"--concurrency={concurrency}",
                    "--loglevel=INFO",
                    f"--include={E2E_TASKS}",
                    f"--queues={self.queue}",
                    f"--hostname={name}-{self.queue}@%h",
                    "--without-gossip",
                    "--without-mingle",
                    "--without-heartbeat",
                ],
                cwd=REPO_ROOT,
                env=environment,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        worker = Worker(name, process, log_path)
        self.started.append(worker)
        if ready:
            wait_for(lambda: " ready." in worker.log(), f"worker {name} to start", self)
        return worker

    def stop_all(self) -> None:
        for worker in self.started:
            worker.stop()

    def logs(self) -> str:
        return "\n".join(
            f"----- worker {w.name} (exit {w.process.returncode}) -----\n{w.log()[-6000:]}"
            for w in self.started
        )

    def check_alive(self) -> None:
        for worker in self.started:
            if not worker.killed and not worker.alive():
                pytest.fail(
                    f"worker {worker.name} exited with {worker.process.returncode}\n{self.logs()}"
                )


def wait_for(
    condition: Callable[[], Any],
    what: str,
    workers: Workers | None = None,
    timeout: float = TIMEOUT,
    beat: Beat | None = None,
) -> Any:
    """Poll until ``condition()`` is truthy; fail with the workers' logs on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if workers is not None:
            workers.check_alive()
        if beat is not None:
            beat.check()
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}\n{workers and workers.logs()}")


class Beat:
    """The beat side, in-process: a ``Ticker`` with the real clock, ticking from a thread."""

    def __init__(self, app: Celery, settings: SchedulerSettings, period: float = 0.1) -> None:
        self.publisher = CeleryPublisher(app)
        self.ticker = Ticker(
            self.publisher, clock=SystemClock(), settings=settings, owner="e2e-beat"
        )
        self.period = period
        self.ticks = 0
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="e2e-beat", daemon=True)

    def start(self) -> Beat:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    self.ticker.tick()
                except Exception as exc:  # reported by check() in the test thread
                    self.errors.append(exc)
                    return
                self.ticks += 1
                self._stop.wait(self.period)
        finally:
            connection.close()  # this thread's own connection

    def check(self) -> None:
        if self.errors:
            raise AssertionError(f"the beat thread failed: {self.errors[0]!r}") from self.errors[0]

    def wait_ticks(self, count: int = 2) -> None:
        """Let the beat run ``count`` more full ticks."""
        target = self.ticks + count
        wait_for(lambda: self.ticks >= target, f"{count} beat ticks", beat=self)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.check()


class Probe:
    """What the e2e tasks (``project/demo/e2e_tasks.py``) reported to Redis under ``ns``."""

    def __init__(self, redis_url: str, ns: str) -> None:
        self.redis_url = redis_url
        self.client = redis.Redis.from_url(redis_url, decode_responses=True)
        self.ns = ns

    def executions(self) -> int:
        return int(self.client.get(f"{self.ns}:executions") or 0)

    def runs(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.client.lrange(f"{self.ns}:runs", 0, -1)]

    def sink(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in self.client.hgetall(f"{self.ns}:sink").items()}

    def flag(self, name: str) -> bool:
        return bool(self.client.exists(f"{self.ns}:{name}"))

    def set_flag(self, name: str) -> None:
        self.client.set(f"{self.ns}:{name}", 1)

    def kwargs(self, **extra: Any) -> dict[str, Any]:
        """The kwargs every e2e task takes, plus ``extra``."""
        return {"redis_url": self.redis_url, "ns": self.ns, **extra}

    def clear(self) -> None:
        keys = list(self.client.scan_iter(f"{self.ns}:*"))
        if keys:
            self.client.delete(*keys)


def next_second(after: float = 1.0) -> datetime:
    """A whole-second instant at least ``after`` seconds from now: an interval anchor whose
    first slot the beat reaches right away."""
    now = datetime.now(UTC) + timedelta(seconds=after)
    return now.replace(microsecond=0) + timedelta(seconds=1)


def states(schedule_id: Any) -> list[tuple[str, str]]:
    """(state, reason) of a schedule's occurrences, in slot order."""
    return [
        (str(state), str(reason))
        for state, reason in Occurrence.objects.filter(schedule_id=schedule_id)
        .order_by("scheduled_for")
        .values_list("state", "reason")
    ]


def state_of(pk: Any) -> str:
    return str(Occurrence.objects.values_list("state", flat=True).get(pk=pk))


def remove_unacked(client: redis.Redis, queues: Iterable[str]) -> None:
    """Drop messages that a killed worker left unacknowledged on these queues.

    kombu keeps them in the ``unacked`` hash of the Redis database and would put them back
    on the queue after the visibility timeout (an hour), long after the test.
    """
    names = set(queues)
    for tag, payload in client.hgetall("unacked").items():
        try:
            routing_key = json.loads(payload)[2]
        except (ValueError, IndexError, TypeError):
            continue
        if routing_key in names:
            client.hdel("unacked", tag)
            client.zrem("unacked_index", tag)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"
