"""Worker metrics with a plain prefork worker: no PROMETHEUS_MULTIPROC_DIR set by hand, the
worker's own port serves the sum over its pool's processes."""

from __future__ import annotations

import socket
import urllib.request
from datetime import UTC, datetime, timedelta

import pytest
from celery import Celery
from prometheus_client.parser import text_string_to_metric_families

from scheduler_app.authoring import api
from scheduler_app.models import Occurrence, OccurrenceState
from tests.acceptance.conftest import BEAT_SETTINGS
from tests.acceptance.e2e import Beat, Workers, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

RUNS = 6


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def succeeded(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "scheduler_occurrences_finished"
        for sample in family.samples
        if sample.name.endswith("_total") and sample.labels.get("state") == "succeeded"
    )


def test_a_prefork_worker_serves_the_sum_over_its_pool(
    workers: Workers, publisher_app: Celery
) -> None:
    port = free_port()
    worker = workers.start(
        pool="prefork", concurrency=2, env={"SCHEDULER_WORKER_METRICS_PORT": str(port)}
    )
    for index in range(RUNS):  # each a moment ahead of its own now (a loaded machine is slow)
        at = datetime.now(UTC) + timedelta(seconds=1)
        api.run_once("demo.ping", at=at, key=f"metrics-{index}")
    beat = Beat(publisher_app, BEAT_SETTINGS).start()
    try:
        wait_for(
            lambda: Occurrence.objects.filter(state=OccurrenceState.SUCCEEDED).count() == RUNS,
            f"{RUNS} runs",
            workers,
            beat=beat,
        )
    finally:
        beat.stop()
    # Counted in the pool's child processes, served by the main process.
    wait_for(lambda: succeeded(port) == RUNS, f"{RUNS} succeeded in /metrics", workers)
    assert "the pool's counters are summed over its processes" in worker.log()
