"""Our scheduler: ``DurableScheduler`` (start-up), ``Ticker`` + ``CeleryPublisher`` (bursts, the
simulated hour) and a cProfile of one burst."""

from __future__ import annotations

import cProfile
import io
import pstats
import time
from datetime import datetime, timedelta
from typing import Any

from bench.scale.env import (
    BudgetExceeded,
    budget,
    celery_app,
    queued,
    rss,
    setup_django,
)
from bench.scale.workload import set_due

LABEL = "this project"


def build(app: Any) -> Any:
    from scheduler_app.beat import DurableScheduler

    return DurableScheduler(app=app)


def bare_ticks(scheduler: Any, ticks: int) -> list[float]:
    """The ``Ticker`` alone: without beat's ``close_old_connections()``, in ms."""
    samples = []
    for _ in range(ticks):
        begin = time.perf_counter()
        scheduler.ticker.tick()
        samples.append((time.perf_counter() - begin) * 1000)
    return samples


def close(scheduler: Any) -> None:
    return None


def running_ticker(at: datetime) -> Any:
    """A ``Ticker`` as a running beat has it just before ``at``: its first tick (the start-up
    jobs: monitor pass, clock-skew check, heartbeat) done a second earlier, with nothing due,
    and the process settled (``Ticker.settle``);
    the other two schedulers are likewise built before their bursts."""
    from scheduler_app.clock import FakeClock
    from scheduler_app.publishing import CeleryPublisher
    from scheduler_app.ticker import Ticker

    clock = FakeClock(at - timedelta(seconds=1))
    ticker = Ticker(CeleryPublisher(celery_app()), clock=clock, owner="bench")
    ticker.tick()
    ticker.settle()  # as the beat does after its first tick
    clock.set(at)
    return ticker


def burst(size: int, at: datetime, seconds: float) -> dict[str, Any]:
    """``Ticker.tick()`` with a FakeClock standing at ``at`` until all ``size`` are published."""
    from scheduler_app.models import Occurrence, OccurrenceState

    set_due(size, at)
    ticker = running_ticker(at)
    published = ticks = 0
    finished = True
    begin = time.perf_counter()
    try:
        with budget(seconds):
            while published < size:
                result = ticker.tick()
                ticks += 1
                published += result.published
                if not result.published and not result.created:
                    break
    except BudgetExceeded:
        finished = False
    elapsed = time.perf_counter() - begin
    dispatched = Occurrence.objects.filter(state=OccurrenceState.DISPATCHED).count()
    sent = queued()
    if finished and (dispatched != size or sent != size):
        raise AssertionError(f"ours: {dispatched} dispatched, {sent} queued, expected {size}")
    return {"finished": finished, "seconds": elapsed, "sent": sent, "ticks": ticks}


def soak_child(at: datetime, hour: float) -> dict[str, Any]:
    """Inside a fresh process: drive ``Ticker`` (real ``CeleryPublisher`` to Redis) with a
    FakeClock through ``hour`` simulated seconds, advancing by the sleep each tick returns
    (what ``celery beat`` does); RSS at the start, every simulated minute, and at the end."""
    setup_django()
    from scheduler_app.clock import FakeClock
    from scheduler_app.publishing import CeleryPublisher
    from scheduler_app.ticker import Ticker

    clock = FakeClock(at - timedelta(seconds=1))
    ticker = Ticker(CeleryPublisher(celery_app()), clock=clock, owner="bench-soak")
    begin = time.perf_counter()
    ticker.tick()
    start = rss()
    end = at + timedelta(seconds=hour)
    ticks = published = created = spins = 0
    samples = [start["rss_mib"]]
    next_sample = clock.now() + timedelta(minutes=1)
    while clock.now() < end:
        result = ticker.tick()
        ticks += 1
        published += result.published
        created += result.created
        if result.sleep > 0:
            clock.advance(result.sleep)
            spins = 0
        else:
            spins += 1
            if spins > 100:  # should not happen: never let a stuck row stall the hour
                clock.advance(1.0)
        if clock.now() >= next_sample:
            samples.append(rss()["rss_mib"])
            next_sample += timedelta(minutes=1)
    final = rss()
    return {
        "rss_start_mib": start["rss_mib"],
        "rss_end_mib": final["rss_mib"],
        "rss_max_mib": max([*samples, final["rss_mib"]]),
        "peak_rss_mib": final["peak_rss_mib"],
        "ticks": ticks,
        "created": created,
        "published": published,
        "wall_s": round(time.perf_counter() - begin, 2),
    }


PHASES = [
    ("tick (all)", "scheduler_app/ticker.py", "tick"),
    ("materialize + hand-off, per batch", "scheduler_app/ticker.py", "materialize"),
    ("  materialize_batch (claim, plan, insert, advance)", "materialize.py", "materialize_batch"),
    ("    plan_schedule (Python: slots, keys, rows)", "materialize.py", "plan_schedule"),
    ("    insert_occurrences (INSERT ... one JSON document)", "bulk.py", "insert_occurrences"),
    ("    save_advanced (UPDATE ... one JSON document)", "bulk.py", "save_advanced"),
    ("  hand_off (screen, publish, mark)", "outbox.py", "hand_off"),
    ("    publish (Redis pipeline, AMQP confirms, send_task)", "publishing/__init__.py", "publish"),
    ("      Envelopes.commands (one message's Redis commands)", "publishing/redis.py", "commands"),
    ("        fill_values (the message's own values)", "publishing/messages.py", "fill_values"),
    (
        "        Envelope.payload (filled into the kind's JSON)",
        "publishing/envelopes.py",
        "payload",
    ),
    (
        "        MessageBuilder.build (kombu's path: a kind's first messages)",
        "publishing/messages.py",
        "build",
    ),
    ("      context_headers", "outbox.py", "context_headers"),
    ("      redis_commands (kombu's envelope, JSON)", "publishing/redis.py", "redis_commands"),
    ("    mark_dispatched (UPDATE)", "outbox.py", "mark_dispatched"),
    ("outbox recovery read (dispatch: claim_pending)", "outbox.py", "claim_pending"),
    ("SQL: psycopg cursor execute", "psycopg/cursor.py", "execute"),
    ("Redis: socket sendall", "~", "<method 'sendall' of '_socket.socket' objects>"),
]
"""Phases of a burst by (module suffix, function): the profile's cumulative time of each.
A phase whose function the engine no longer has shows 0 (rename it here)."""


def profile_burst(size: int, at: datetime, limit: int = 25) -> dict[str, Any]:
    """cProfile one of our bursts: where the time goes, per published slot."""

    set_due(size, at)
    ticker = running_ticker(at)
    profiler = cProfile.Profile()
    begin = time.perf_counter()
    profiler.enable()
    result = ticker.tick()
    profiler.disable()
    wall = time.perf_counter() - begin
    raw: dict[Any, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    rows = []
    for label, module, function in PHASES:
        seconds = sum(
            cumulative
            for (filename, _, name), (_, _, _, cumulative, _) in raw.items()
            if name == function and filename.endswith(module)
        )
        rows.append(
            {
                "phase": label,
                "seconds": round(seconds, 4),
                "us_per_slot": round(seconds / size * 1e6, 1),
            }
        )
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(limit)
    return {
        "burst": size,
        "published": result.published,
        "wall_s": round(wall, 3),
        "phases": rows,
        "top_own_time": text.getvalue(),
    }
