"""Fixtures for the end-to-end tests with real workers (see ``e2e.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery
from django.db import connection

import project.demo.e2e_tasks  # noqa: F401 - registers the e2e task names for validation
from scheduler_app.conf import SchedulerSettings
from tests.acceptance.e2e import Beat, Probe, Workers, remove_unacked, unique

BEAT_SETTINGS = SchedulerSettings(
    MAX_INTERVAL=0.2,
    RECONCILE_INTERVAL=0.5,
    PUBLISH_LEASE=10.0,
    RETRY_PUBLISH_GRACE=30.0,
)
"""The in-process beat: short ticks and a reconciler pass every half second."""


@pytest.fixture
def queue(redis_url: str) -> Iterator[str]:
    name = unique("scheduler-e2e")
    yield name
    client = redis.Redis.from_url(redis_url)
    client.delete(name)
    remove_unacked(client, [name])


@pytest.fixture
def workers(redis_url: str, queue: str, tmp_path: Path) -> Iterator[Workers]:
    """Start workers with ``workers.start(...)``; all are stopped at the end of the test."""
    started = Workers(redis_url, queue, tmp_path)
    try:
        yield started
    finally:
        started.stop_all()
        connection.close()


@pytest.fixture
def worker(workers: Workers) -> Workers:
    """One solo-pool worker, already running."""
    workers.start(pool="solo", concurrency=1)
    return workers


@pytest.fixture
def publisher_app(redis_url: str, queue: str) -> Iterator[Celery]:
    """A Celery app configured like the project's, but on Redis and the test's queue."""
    app = Celery("scheduler-e2e", broker=redis_url, set_as_current=False)
    app.conf.task_default_queue = queue
    app.conf.broker_connection_retry_on_startup = True
    yield app
    app.close()


@pytest.fixture
def beat(publisher_app: Celery) -> Iterator[Beat]:
    """The beat side, ticking every 0.1 s with the real clock until the test ends."""
    running = Beat(publisher_app, BEAT_SETTINGS).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def probe(redis_url: str) -> Iterator[Callable[[], Probe]]:
    """``probe()`` gives a fresh Redis namespace for the e2e tasks to report into."""
    made: list[Probe] = []

    def make() -> Probe:
        made.append(Probe(redis_url, unique("e2e")))
        return made[-1]

    yield make
    for each in made:
        each.clear()


@pytest.fixture(autouse=True)
def short_intervals(settings: Any) -> None:
    """The end-to-end tests use 1-3 s intervals to stay short (the default minimum is 10 s)."""
    settings.SCHEDULER_MIN_INTERVAL = 1
