"""Several schedulers ticking at once (active-active, PostgreSQL SKIP LOCKED).

Each ticker runs in its own thread with its own database connection, over thousands of due
slots; all of them see the same fixed ``now`` per round. Afterwards every intended slot
(computed independently with the time engine) has exactly one occurrence, each was published
with its own id as the task id, and no schedule was materialized twice (its counters say so).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from scheduler_app import services
from scheduler_app.clock import FakeClock
from scheduler_app.conf import SchedulerSettings
from scheduler_app.definition.schedule import version_id
from scheduler_app.models import (
    Occurrence,
    OccurrenceState,
    Schedule,
    ScheduleVersion,
    bulk_create_schedules,
)
from scheduler_app.publishing import CeleryPublisher
from scheduler_app.ticker import Ticker, TickResult
from scheduler_app.timing import build_timing, slots_between

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

REPO_ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
TEMPLATES = {
    # An interval grid whose first slot is its anchor, and a cron rule in a zone with a
    # half-hour offset.
    "interval": {"kind": "interval", "rule": "60s", "anchor": T0},
    "cron": {"kind": "cron", "rule": "*/2 * * * *", "timezone": "Asia/Kolkata"},
}
INDEPENDENT_TIMINGS = {
    "interval": build_timing(kind="interval", rule=timedelta(seconds=60), anchor=T0),
    "cron": build_timing(kind="cron", rule="*/2 * * * *", timezone="Asia/Kolkata"),
}
# Every round is a fresh concurrent tick of all schedulers at the same instant.
PER_TEMPLATE = 500  # 1,000 schedules, 7,500 due slots
ROUNDS = [T0 + timedelta(minutes=4, seconds=30), T0 + timedelta(minutes=9, seconds=59)]


class _Producer:
    def __enter__(self) -> _Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class RecordingApp:
    """Stands in for the Celery app under ``CeleryPublisher``: records every ``send_task``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent: list[dict[str, Any]] = []

    def producer_or_acquire(self) -> _Producer:
        return _Producer()

    def send_task(self, name: str, **options: Any) -> None:
        with self.lock:
            self.sent.append(
                {
                    "task": name,
                    "task_id": options["task_id"],
                    "key": options["headers"]["scheduler"]["idempotency_key"],
                    "occurrence_id": options["headers"]["scheduler"]["occurrence_id"],
                }
            )


def create_schedules(per_template: int) -> dict[str, list[uuid.UUID]]:
    """One schedule per template through the service layer, then bulk copies of it."""
    clock = FakeClock(T0)
    ids: dict[str, list[uuid.UUID]] = {}
    for name, definition in TEMPLATES.items():
        template = services.create_schedule(
            clock=clock,
            task="demo.ping",
            max_lateness=3600,  # every slot of a round is on time: no misfire policy involved
            overlap_policy="allow",  # nothing runs here: every slot is published, none held
            name=f"{name}-template",
            **definition,
        )
        assert template.next_run_at == T0
        snapshot = ScheduleVersion.objects.get(schedule=template)
        copied = {
            field.attname: getattr(template, field.attname)
            for field in Schedule._meta.concrete_fields
            if not field.primary_key and field.attname != "key"
        }
        schedules = [Schedule(id=uuid.uuid4(), **copied) for _ in range(per_template - 1)]
        bulk_create_schedules(schedules, batch_size=1000)
        ScheduleVersion.objects.bulk_create(
            [
                ScheduleVersion(
                    id=version_id(schedule.id, 1),
                    schedule_id=schedule.id,
                    version=1,
                    definition=snapshot.definition,
                    created_at=T0,
                )
                for schedule in schedules
            ],
            batch_size=1000,
        )
        ids[name] = [template.id] + [schedule.id for schedule in schedules]
    return ids


def expected_slots(ids: dict[str, list[uuid.UUID]], until: datetime) -> set[tuple[str, datetime]]:
    expected = set()
    for name, schedule_ids in ids.items():
        slots = slots_between(INDEPENDENT_TIMINGS[name], T0 - timedelta(microseconds=1), until)
        expected.update((str(sid), slot) for sid in schedule_ids for slot in slots)
    return expected


@contextmanager
def own_connection() -> Iterator[None]:
    try:
        yield
    finally:
        connection.close()


def tick_concurrently(tickers: Sequence[Ticker]) -> list[TickResult]:
    """Start every ticker's tick at the same moment, each in its own thread and connection."""
    barrier = threading.Barrier(len(tickers))
    errors: list[BaseException] = []
    results: list[TickResult] = []

    def run(ticker: Ticker) -> None:
        with own_connection():
            try:
                barrier.wait(timeout=30)
                results.append(ticker.tick())
            except BaseException as exc:  # reported by the test thread
                errors.append(exc)

    threads = [threading.Thread(target=run, args=(ticker,)) for ticker in tickers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads), "a ticker thread hung"
    assert errors == []
    return results


@pytest.mark.parametrize("schedulers", [2, 3])
def test_concurrent_schedulers_emit_each_slot_exactly_once(schedulers: int) -> None:
    ids = create_schedules(PER_TEMPLATE)
    clock = FakeClock(ROUNDS[0])
    app = RecordingApp()
    settings = SchedulerSettings(BATCH_SIZE=50, PUBLISH_LEASE=3600)
    tickers = [
        Ticker(CeleryPublisher(app), clock=clock, settings=settings, owner=f"beat-{n}")
        for n in range(schedulers)
    ]
    assert not tickers[0].needs_lease  # PostgreSQL: no single-scheduler lease, all work

    planned = 0
    for now in ROUNDS:
        clock.set(now)
        results = tick_concurrently(tickers)
        # ``created`` counts the rows each ticker planned (conflicts included): a schedule
        # claimed by two tickers would be counted twice.
        planned += sum(result.created for result in results)
        assert sum(1 for result in results if result.created) >= 2, "no concurrency happened"

    expected = expected_slots(ids, ROUNDS[-1])
    assert len(expected) == PER_TEMPLATE * (10 + 5)  # 10 interval, 5 cron slots per schedule
    assert planned == len(expected)
    rows = list(
        Occurrence.objects.values_list("id", "schedule_id", "scheduled_for", "state", "trigger")
    )
    got = [(str(schedule_id), slot) for _, schedule_id, slot, _, _ in rows]
    assert len(got) == len(set(got)), "a slot has two occurrences"
    assert set(got) == expected, (
        f"missing {len(expected - set(got))}, unexpected {len(set(got) - expected)}"
    )
    assert {trigger for *_, trigger in rows} == {"scheduled"}

    # No schedule was materialized twice: its counters count each slot once, and it moved on.
    per_schedule = defaultdict(int)
    for schedule_id, _ in expected:
        per_schedule[schedule_id] += 1
    counters = dict(Schedule.objects.values_list("id", "occurrence_count"))
    assert {str(k): v for k, v in counters.items()} == per_schedule
    assert not Schedule.objects.filter(next_run_at__lte=ROUNDS[-1]).exists()

    # Every occurrence was published, always under its own id, and marked dispatched.
    by_occurrence: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for message in app.sent:
        by_occurrence[message["occurrence_id"]].add((message["task_id"], message["key"]))
    stored = {str(pk): key for pk, key in Occurrence.objects.values_list("id", "idempotency_key")}
    never = set(stored) - set(by_occurrence)
    assert not never, f"{len(never)} occurrences never published: " + repr(
        list(
            Occurrence.objects.filter(pk__in=list(never)[:5]).values(
                "state", "publish_lease_until", "created_at", "scheduled_for", "dispatched_at"
            )
        )
    )
    for occurrence_id, publications in by_occurrence.items():
        assert publications == {(occurrence_id, stored[occurrence_id])}
    assert {state for *_, state, _ in rows} == {OccurrenceState.DISPATCHED}
    # With a publish lease longer than the test, no occurrence is published twice.
    assert len(app.sent) == len(stored)


def test_concurrent_scheduler_processes_emit_each_slot_exactly_once(tmp_path: Path) -> None:
    """The same with three OS processes, each a full Django setup on the test database."""
    ids = create_schedules(PER_TEMPLATE)
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": (
            f"postgres://{db['USER'] or 'postgres'}"
            f"{':' + db['PASSWORD'] if db.get('PASSWORD') else ''}"
            f"@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
        ),
    }
    sent: list[dict[str, Any]] = []
    planned = 0
    for round_number, now in enumerate(ROUNDS):
        start = tmp_path / f"start-{round_number}"
        processes = [
            subprocess.Popen(
                [sys.executable, "-m", "tests.integration.concurrent_ticker"]
                + [now.isoformat(), f"process-{n}", str(start)],
                cwd=REPO_ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for n in range(3)
        ]
        try:
            for process in processes:  # all set up and connected: start them together
                assert process.stdout is not None
                assert process.stdout.readline().strip() == "ready", process.communicate()[1]
            start.touch()
            outputs = [process.communicate(timeout=300) for process in processes]
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
                    process.wait()
        for process, (out, err) in zip(processes, outputs, strict=True):
            assert process.returncode == 0, err[-3000:]
            report = json.loads(out.strip().splitlines()[-1])
            planned += report["created"]
            sent.extend(report["sent"])

    expected = expected_slots(ids, ROUNDS[-1])
    assert planned == len(expected)
    rows = list(Occurrence.objects.values_list("id", "schedule_id", "scheduled_for"))
    assert sorted((str(s), slot) for _, s, slot in rows) == sorted(expected)
    assert {(m["occurrence_id"], m["task_id"]) for m in sent} == {
        (str(pk), str(pk)) for pk, _, _ in rows
    }
