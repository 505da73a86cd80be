"""The harness's task: one idempotent business effect per idempotency key, every run counted.

- ``torture_execution``: one row per time the task body starts (raw executions);
- ``torture_effect``: the business effect, unique on the idempotency key and written with
  ``ON CONFLICT DO NOTHING``; it records the slot from the message's context, so two
  occurrences of one slot (a scheduler bug) would show up as two effects for one slot.

The worker's clock is the harness's injected clock (see ``torture.clock``).
"""

from __future__ import annotations

import os
import time

from celery import shared_task
from django.db import connection
from kombu.asynchronous import timer as kombu_timer

from scheduler_app.context import current_occurrence
from scheduler_app.tasks import OccurrenceTask
from scheduler_app.worker import receiving
from torture.clock import OffsetClock, harness_clock


def install_clock() -> None:
    """Give this worker process the harness's clock wherever it reads the time: the task's
    claims and outcomes, the receive leases, and Celery's timer of ``eta`` messages (kombu
    turns an ``eta`` into a delay with ``time.time()``). A real clock step moves all three at
    once; with only the first moved, the beat's reconciler would read every receive lease as
    expired after a step forward, and a retry's ``eta`` would wait for the offset in real
    time (two hours after the step)."""
    clock = harness_clock()
    OccurrenceTask.clock = clock
    receiving.clock = clock
    if isinstance(clock, OffsetClock):
        kombu_timer._time = lambda: clock.now().timestamp()


install_clock()

SINK_TABLES = """
CREATE TABLE IF NOT EXISTS torture_execution (
    id bigserial PRIMARY KEY,
    idempotency_key text NOT NULL,
    occurrence_id uuid NOT NULL,
    attempt integer NOT NULL,
    pid integer NOT NULL,
    absorbed boolean NOT NULL DEFAULT false,
    started_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE IF NOT EXISTS torture_effect (
    idempotency_key text PRIMARY KEY,
    occurrence_id uuid NOT NULL,
    schedule_id uuid NOT NULL,
    scheduled_for timestamptz NOT NULL,
    written_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
"""


@shared_task(name="torture.effect")
def effect(*, work: float = 0.1) -> bool:
    """Count the execution, work for ``work`` seconds, then apply the effect once per key."""
    occurrence = current_occurrence()
    if occurrence is None:
        raise RuntimeError("torture.effect only runs as a scheduled occurrence")
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO torture_execution (idempotency_key, occurrence_id, attempt, pid)"
            " VALUES (%s, %s, %s, %s) RETURNING id",
            [occurrence.idempotency_key, occurrence.occurrence_id, occurrence.attempt, os.getpid()],
        )
        execution = cursor.fetchone()[0]
    time.sleep(work)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO torture_effect"
            " (idempotency_key, occurrence_id, schedule_id, scheduled_for)"
            " VALUES (%s, %s, %s, %s) ON CONFLICT (idempotency_key) DO NOTHING"
            " RETURNING idempotency_key",
            [
                occurrence.idempotency_key,
                occurrence.occurrence_id,
                occurrence.schedule_id,
                occurrence.scheduled_for,
            ],
        )
        applied = cursor.fetchone() is not None
        if not applied:
            cursor.execute(
                "UPDATE torture_execution SET absorbed = true WHERE id = %s", [execution]
            )
    return applied
