"""The bench's surroundings: constants, Django and Celery set-up, Redis, budgets, child processes.

Every process the harness starts writes its stdout and stderr to its own log file under
``var/bench/logs/`` (``spawn``): a pipe nobody reads blocks the child once 64 KiB fill (a
``celery beat`` logs every tick). Results come back as the last JSON line of the child's stdout
log (``last_json``), and failures quote the log's tail.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from bench import report

NAME = "scale"
HEADING = "Scale (`make bench`)"
HARNESS = 2
"""The results' format: 2 is this package (three schedulers, child output in log files);
results without it come from the single-file harness of issue 6."""


def report_names(broker: str) -> tuple[str, str]:
    """The results file name and the docs heading of a run on ``broker``."""
    if broker == "amqp":
        return f"{NAME}-amqp", 'Scale on RabbitMQ (`make bench BENCH_ARGS="--broker amqp"`)'
    return NAME, HEADING


TASK = "bench.noop"
PLAIN_TASK = "bench.plain_noop"
QUEUE = "bench"
"""The bench's queue (``CELERY_TASK_DEFAULT_QUEUE`` in bench/settings.py): never another
process's on a shared RabbitMQ."""
AMQP_URL = "amqp://guest:guest@127.0.0.1:5672//"
ZONES = ["UTC", "Europe/Riga", "America/New_York", "Asia/Tokyo", "Asia/Kolkata", "Australia/Sydney"]
KINDS = ["cron", "cron", "rrule", "interval"]  # 50% cron, 25% rrule, 25% interval
PREFIX = "bench-"
REDBEAT_PREFIX = "redbeat:"
DAY = timedelta(days=1)
HOUR = timedelta(hours=1)
MIB = 1024 * 1024
LOG_DIR = report.ROOT / "var" / "bench" / "logs"

SCHEDULERS = {
    "ours": "this project",
    "redbeat": "celery-redbeat 2.4.2",
    "dcb": "django-celery-beat 2.9.0",
}
"""The three schedulers, in the order of the report's columns."""


class BudgetExceeded(Exception):
    pass


# --- Django, Celery, Redis ------------------------------------------------------------------


def ensure_database() -> None:
    """Create the bench database named by DATABASE_URL if it does not exist yet."""
    import dj_database_url
    import psycopg

    config = dj_database_url.parse(os.environ.get("DATABASE_URL", ""))
    name = config["NAME"]
    if not name or "test" in name:
        raise SystemExit(f"refusing database {name!r}: point DATABASE_URL at a dedicated one")
    with psycopg.connect(
        dbname="postgres",
        autocommit=True,
        host=config["HOST"],
        port=config["PORT"] or 5432,
        user=config["USER"],
    ) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def use_broker(broker: str, amqp_url: str = AMQP_URL) -> None:
    """Before Django is set up (children inherit it): ``redis`` publishes to
    ``CELERY_BROKER_URL``, the bench's Redis db; ``amqp`` publishes to RabbitMQ at
    ``amqp_url`` and keeps the Redis URL in ``BENCH_REDIS_URL`` (celery-redbeat's store)."""
    if broker not in ("redis", "amqp"):
        raise SystemExit(f"--broker {broker!r}: use redis or amqp")
    os.environ.setdefault("BENCH_REDIS_URL", os.environ.get("CELERY_BROKER_URL", ""))
    if broker == "amqp":
        os.environ["CELERY_BROKER_URL"] = amqp_url


def redis_url() -> str:
    """The bench's Redis db: the broker's, or ``BENCH_REDIS_URL`` when publishing to AMQP."""
    from django.conf import settings

    return os.environ.get("BENCH_REDIS_URL") or str(settings.CELERY_BROKER_URL)


def broker_kind() -> str:
    from django.conf import settings

    return "amqp" if str(settings.CELERY_BROKER_URL).startswith("amqp") else "redis"


def setup_django(migrate: bool = False) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    if migrate:
        ensure_database()
    import django

    django.setup()
    from django.conf import settings

    name = settings.DATABASES["default"]["NAME"]
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        raise SystemExit("bench.scale needs PostgreSQL: set DATABASE_URL to the bench database")
    if "test" in str(name):
        raise SystemExit(f"refusing to run against database {name!r}: use a dedicated one")
    if not redis_url().startswith("redis://"):
        raise SystemExit("bench.scale needs Redis: set CELERY_BROKER_URL=redis://.../<db>")
    if not str(settings.CELERY_BROKER_URL).startswith(("redis://", "amqp://")):
        raise SystemExit("bench.scale publishes to Redis or RabbitMQ (--broker redis|amqp)")
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)


def celery_app() -> Any:
    """The example project's app with the bench's two no-op tasks: ``bench.noop`` (the app's
    default base, ``OccurrenceTask``) and ``bench.plain_noop`` (a plain ``celery.Task``)."""
    from celery import Task

    from project.celery import app

    app.set_current()
    app.set_default()
    if TASK not in app.tasks:
        app.task(name=TASK)(_noop)
    if PLAIN_TASK not in app.tasks:
        app.task(name=PLAIN_TASK, base=Task)(_noop)
    return app


def _noop(**kwargs: Any) -> None:
    return None


def redis_client() -> Any:
    import redis

    return redis.Redis.from_url(redis_url())


def clear_broker(keep_redbeat: bool = True) -> int:
    """Empty the bench's Redis db (queues, bindings, results; celery-redbeat's entries,
    ``redbeat:*``, stay unless ``keep_redbeat`` is false) and, on RabbitMQ, the bench's
    queues. Returns the Redis keys deleted."""
    if broker_kind() == "amqp":
        purge_amqp()
    client = redis_client()
    if not keep_redbeat:
        size = client.dbsize()
        client.flushdb()
        return int(size)
    doomed = [
        key for key in client.scan_iter(count=10_000) if not key.startswith(REDBEAT_PREFIX.encode())
    ]
    for start in range(0, len(doomed), 10_000):
        client.delete(*doomed[start : start + 10_000])
    return len(doomed)


AMQP_QUEUES = (QUEUE, "bench.raw")


def purge_amqp() -> None:
    app = celery_app()
    for name in AMQP_QUEUES:  # a connection each: a channel error closes the channel
        with app.connection_for_write() as conn, suppress(*conn.channel_errors):
            conn.default_channel.queue_purge(name)  # an error: not declared, nothing to purge


def queued() -> int:
    """Messages waiting in the bench's queue."""
    if broker_kind() == "redis":
        return int(redis_client().llen(QUEUE))
    app = celery_app()
    with app.connection_for_write() as conn:
        try:
            declared = conn.default_channel.queue_declare(QUEUE, passive=True)
        except conn.channel_errors:  # not declared yet: nothing was published
            return 0
        return int(declared.message_count)


@contextmanager
def queue_counter() -> Iterator[Callable[[], int]]:
    """A cheap ``queued()`` for polling: one Redis client, or one AMQP connection kept open
    (a passive declare of a queue not declared yet closes the channel: then 0, new channel)."""
    if broker_kind() == "redis":
        client = redis_client()
        yield lambda: int(client.llen(QUEUE))
        return
    app = celery_app()
    with app.connection_for_write() as conn:
        channel = [conn.channel()]

        def count() -> int:
            try:
                return int(channel[0].queue_declare(QUEUE, passive=True).message_count)
            except conn.channel_errors:
                channel[0] = conn.channel()
                return 0

        yield count


def rss() -> dict[str, float]:
    """Current and peak resident set size of this process, in MiB."""
    values = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) * 1024 / MIB
    return {"rss_mib": round(values["VmRSS"], 1), "peak_rss_mib": round(values["VmHWM"], 1)}


def due_instant() -> datetime:
    """The shared due instant T: this minute (UTC). Real for django-celery-beat and
    celery-redbeat, which read the real clock; a FakeClock for ours."""
    return datetime.now(UTC).replace(second=0, microsecond=0)


def _alarm(_signum: int, _frame: Any) -> None:
    raise BudgetExceeded


@contextmanager
def budget(seconds: float) -> Iterator[None]:
    """Raise ``BudgetExceeded`` inside the block once ``seconds`` pass (SIGALRM)."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- child processes, each with its own log file ---------------------------------------------

_serial = itertools.count(1)


def log_path(label: str) -> Path:
    """A fresh log file for one child process: ``var/bench/logs/<pid>-<n>-<label>.log``."""
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    return LOG_DIR / f"{os.getpid()}-{next(_serial):03d}-{label}.log"


class Child:
    """A child process whose stdout and stderr go to two log files (never a pipe)."""

    def __init__(
        self,
        label: str,
        command: Sequence[str],
        env: dict[str, str] | None = None,
    ) -> None:
        self.label = label
        self.out_path = log_path(label)
        self.err_path = self.out_path.with_suffix(".err.log")
        self._out: IO[bytes] = self.out_path.open("wb")
        self._err: IO[bytes] = self.err_path.open("wb")
        self.started_at = time.time()  # wall clock: a child can report its moments against it
        self.process = subprocess.Popen(
            list(command),
            cwd=report.ROOT,
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=self._err,
            env={**os.environ, **(env or {})},
        )

    def wait(self, timeout: float | None = None) -> int:
        try:
            return self.process.wait(timeout=timeout)
        finally:
            if self.process.poll() is not None:
                self._close()

    def stop(self, grace: float = 30.0) -> int:
        """SIGTERM, wait up to ``grace`` s, then SIGKILL."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.wait(grace)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.wait()

    def _close(self) -> None:
        for handle in (self._out, self._err):
            if not handle.closed:
                handle.close()

    def stdout(self) -> str:
        return self.out_path.read_text(errors="replace")

    def stderr_tail(self, chars: int = 3000) -> str:
        return tail(self.err_path, chars)

    def result(self) -> dict[str, Any]:
        return last_json(self.stdout())


def tail(path: Path, chars: int = 3000) -> str:
    """The last ``chars`` characters of a log file ('' if it is missing)."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(size - chars * 4, 0))
            return handle.read().decode(errors="replace")[-chars:]
    except OSError:
        return ""


def last_json(text: str) -> dict[str, Any]:
    """The last line of ``text`` that is a JSON object (a child prints its result last)."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    raise ValueError(f"no JSON result in the child's output: {text[-500:]!r}")


def bench_child(label: str, *args: str) -> Child:
    """``python -m bench.scale --child ...`` in a fresh process."""
    return Child(label, [sys.executable, "-m", "bench.scale", "--child", *args])


def run_child(label: str, *args: str, timeout: float) -> dict[str, Any]:
    """Run a bench child to completion; its JSON result, or ``{"finished": False, ...}`` with
    the budget or the error (the log's tail) when it overran or failed."""
    child = bench_child(label, *args)
    begin = time.perf_counter()
    try:
        code = child.wait(timeout)
    except subprocess.TimeoutExpired:
        child.stop(grace=5)
        return {"finished": False, "budget_s": timeout, "log": str(child.err_path)}
    if code:
        return {
            "finished": False,
            "budget_s": timeout,
            "error": child.stderr_tail(),
            "log": str(child.err_path),
        }
    return child_result(child, begin)


def child_result(child: Child, begin: float) -> dict[str, Any]:
    """A finished child's JSON result, with its wall time (``begin``: ``perf_counter()`` at
    its start) and, when it reports its first tick's end, the time from its spawn to then."""
    result = child.result()
    result["process_s"] = time.perf_counter() - begin
    if "first_tick_done_at" in result:
        result["process_start_s"] = result["first_tick_done_at"] - child.started_at
    return result


def celery_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "celery", *args]
