"""Helpers for ``test_worker_messages.py``: one real worker per broker, what its tasks saw,
the occurrences to publish, and cleaning up the queues afterwards."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis
from celery import Celery
from kombu import Connection

from scheduler_app.models import Occurrence, Schedule, ScheduleVersion
from scheduler_app.publishing import TaskCall
from tests.acceptance.message_app import exchange_name, queue_names, record_key

REPO_ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 30.0
VOLATILE_PROPERTIES = ("delivery_tag", "expiration")
"""Message properties that differ between any two publishes: kombu's Redis transport draws a
fresh delivery tag for every message; ``expiration`` is milliseconds from the publish instant
to ``expires`` (an AMQP property, computed a few milliseconds apart)."""


@dataclass
class Worker:
    """One ``celery worker`` subprocess (solo pool) on the run's queues, logging to a file."""

    hostname: str
    process: subprocess.Popen[bytes]
    log_path: Path

    @classmethod
    def start(
        cls,
        *,
        broker: str,
        record_url: str,
        prefix: str,
        directory: Path,
        queues: list[str],
        env: dict[str, str] | None = None,
    ) -> Worker:
        hostname = f"msg-{prefix}@localhost"
        log_path = directory / f"worker-{prefix}.log"
        environment = {
            **os.environ,
            "MESSAGE_BROKER_URL": broker,
            "MESSAGE_REDIS_URL": record_url,
            "MESSAGE_PREFIX": prefix,
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
        environment.pop("DJANGO_SETTINGS_MODULE", None)  # a plain Celery worker: no Django
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [
                    *(sys.executable, "-m", "celery", "-A", "tests.acceptance.message_app"),
                    *("worker", "--pool=solo", "--loglevel=INFO", f"--hostname={hostname}"),
                    f"--queues={','.join(queues)}",
                    *("--without-gossip", "--without-mingle", "--without-heartbeat"),
                ],
                cwd=REPO_ROOT,
                env=environment,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        worker = cls(hostname, process, log_path)
        worker.wait_for(lambda: " ready." in worker.log(), "the worker to start")
        return worker

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, condition: Callable[[], Any], what: str, timeout: float = TIMEOUT) -> Any:
        """Poll until ``condition()`` is truthy; fail with the worker's log on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            if self.process.poll() is not None:
                pytest.fail(f"the worker exited with {self.process.returncode}\n{self.log()}")
            time.sleep(0.05)
        pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}\n{self.log()[-6000:]}")

    def stop(self, app: Celery) -> None:
        """Shut down through a remote-control command: a SIGTERM would wait for the worker's
        idle event loop to wake up (up to 10 s on RabbitMQ); kill after a timeout."""
        if self.process.poll() is None:
            app.control.shutdown(destination=[self.hostname])
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


class Seen:
    """What the worker's tasks recorded, by task id."""

    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self.client = client
        self.key = record_key(prefix)

    def all(self) -> dict[str, dict[str, Any]]:
        records = (json.loads(raw) for raw in self.client.lrange(self.key, 0, -1))
        return {record["id"]: record for record in records}

    def order(self) -> list[str]:
        return [json.loads(raw)["id"] for raw in self.client.lrange(self.key, 0, -1)]

    def wait(self, worker: Worker, ids: list[str]) -> dict[str, dict[str, Any]]:
        def arrived() -> dict[str, dict[str, Any]] | None:
            records = self.all()
            return records if set(ids) <= set(records) else None

        records: dict[str, dict[str, Any]] = worker.wait_for(arrived, f"tasks {ids} to run")
        return {task_id: records[task_id] for task_id in ids}


def occurrence(
    task: str = "msg.record",
    *,
    options: dict[str, Any] | None = None,
    not_before: datetime | None = None,
    deadline_at: datetime | None = None,
) -> Occurrence:
    """An unsaved occurrence whose slot has come (publishing reads it, never writes it)."""
    scheduled = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
    return Occurrence(
        id=uuid.uuid4(),
        schedule=Schedule(id=uuid.uuid4(), options=options or {}),
        schedule_version=ScheduleVersion(version=2, definition={"objective": "messages"}),
        trigger="scheduled",
        scheduled_for=scheduled,
        window_start=scheduled - timedelta(minutes=1),
        window_end=scheduled,
        timezone="Europe/Riga",
        idempotency_key=f"key-{uuid.uuid4().hex}",
        task=task,
        kwargs={"city": "Rīga", "n": 7, "nested": {"ü": [1, 2.5, None, True]}},
        not_before=not_before or scheduled,
        deadline_at=deadline_at,
        created_at=scheduled,
    )


def twin(original: Occurrence) -> Occurrence:
    """The same occurrence under another id: the one published through ``send_task``."""
    copy = Occurrence(**{f.attname: getattr(original, f.attname) for f in Occurrence._meta.fields})
    copy.id = uuid.uuid4()
    copy.schedule = original.schedule
    copy.schedule_version = original.schedule_version
    return copy


def send_task(app: Celery, row: Occurrence) -> None:
    """The reference: the same call, made the way an application makes it."""
    call = TaskCall.of(row, datetime.now(UTC))
    app.send_task(
        call.name,
        kwargs=call.kwargs,
        task_id=call.task_id,
        headers=call.headers,
        expires=call.expires,
        eta=call.eta,
        **call.routing,
    )


def comparable(record: dict[str, Any], task_id: str) -> dict[str, Any]:
    """A record with its own id replaced and the per-publish values dropped."""
    properties = {
        key: value
        for key, value in record.get("properties", {}).items()
        if key not in VOLATILE_PROPERTIES
    }
    rest = {key: value for key, value in record.items() if key not in ("at", "properties")}
    normalized = json.loads(json.dumps({**rest, "properties": properties}).replace(task_id, "<id>"))
    assert isinstance(normalized, dict)
    return normalized


def clean_redis(client: redis.Redis, prefix: str) -> None:
    """Every key of the run: its queues and bindings, records and results, the worker's
    unacknowledged-message entries."""
    for key in client.scan_iter(match=f"*{prefix}*"):
        client.delete(key)
    for name in ("_kombu.binding.celery.pidbox", "_kombu.binding.reply.celery.pidbox"):
        for member in client.smembers(name):
            if prefix.encode() in member:
                client.srem(name, member)


def clean_rabbitmq(url: str, prefix: str, queues: list[str] | None = None) -> None:
    """Delete the run's queues and exchanges (the broker keeps durable ones for ever)."""
    names = list(queue_names(prefix).values()) if queues is None else queues
    with Connection(url) as connection:
        channel: Any = connection.default_channel  # py-amqp's channel
        for name in names:
            channel.queue_delete(name)
        for name in (exchange_name(prefix), f"{prefix}-topic", *names):
            channel.exchange_delete(name)


@contextmanager
def own_vhost(url: str, name: str) -> Iterator[str]:
    """A RabbitMQ vhost of the run's own (with ``rabbitmqctl``), deleted with everything in it:
    native delayed delivery declares Celery's shared ``celery_delayed_*`` exchanges and queues.
    Without ``rabbitmqctl`` the given vhost is used and they stay (a worker declares them
    again as they are)."""
    ctl = shutil.which("rabbitmqctl")
    made = ctl is not None and _rabbitmqctl(ctl, "add_vhost", name)
    if not made:
        yield url
        return
    assert ctl is not None
    try:
        _rabbitmqctl(ctl, "set_permissions", "-p", name, "guest", ".*", ".*", ".*")
        yield urlunsplit(urlsplit(url)._replace(path=f"/{name}"))
    finally:
        _rabbitmqctl(ctl, "delete_vhost", name)


def _rabbitmqctl(ctl: str, *args: str) -> bool:
    done = subprocess.run([ctl, *args], capture_output=True, timeout=60)
    return done.returncode == 0
