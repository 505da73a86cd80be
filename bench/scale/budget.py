"""The budget per slot (issue 39): where one burst's time goes, without a profiler.

Each phase of a tick (the functions of ``PHASES``) is wrapped with a timer, and so are the
database's statements (Django's ``execute_wrappers``, which the worker's and the probe's raw
statements pass too) and the broker's round trips (redis-py's ``send_packed_command`` and
``read_response``). A phase's wall time is split into the time its statements waited on
PostgreSQL (its transactions' commits included), the time it waited on the broker, and the
rest: Python. Unlike the cProfile of the
burst (``profile_burst``), nothing is slowed down but one ``perf_counter`` pair per call.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from bench.scale.workload import set_due

PHASES: list[tuple[str, str, str]] = [
    ("tick (all)", "scheduler_app.ticker", "Ticker.tick"),
    ("materialize_batch", "scheduler_app.dispatch.materialize", "materialize_batch"),
    ("claim the due schedules", "scheduler_app.dispatch.claim", "claim_due"),
    ("plan (rules, keys, rows)", "scheduler_app.dispatch.materialize", "plan_schedule"),
    ("insert the occurrences", "scheduler_app.dispatch.bulk", "insert_occurrences"),
    ("advance the schedules", "scheduler_app.dispatch.bulk", "save_advanced"),
    (
        "overlap (open rows counted, states set)",
        "scheduler_app.dispatch.overlapping",
        "apply_overlap",
    ),
    ("attach (each row's schedule and version)", "scheduler_app.dispatch.claim", "attach"),
    ("hand_off", "scheduler_app.dispatch.outbox", "hand_off"),
    ("screen (version, quotas, kill switch)", "scheduler_app.safety.handoff", "screen"),
    ("publish (messages, broker)", "scheduler_app.publishing", "CeleryPublisher.publish"),
    ("mark dispatched", "scheduler_app.dispatch.outbox", "mark_dispatched"),
]
"""(label, module, function or Class.method) of each timed phase."""
DERIVED = {
    "the rest of materialize_batch (transaction, lease, budget)": (
        "materialize_batch",
        (
            "claim the due schedules",
            "plan (rules, keys, rows)",
            "insert the occurrences",
            "advance the schedules",
            "overlap (open rows counted, states set)",
            "attach (each row's schedule and version)",
        ),
    ),
    "the rest of hand_off": (
        "hand_off",
        (
            "screen (version, quotas, kill switch)",
            "publish (messages, broker)",
            "mark dispatched",
        ),
    ),
}
"""Rows computed as a phase less its timed parts."""


class Clocks:
    """Wall, PostgreSQL and broker seconds per phase; the open phases are a stack."""

    def __init__(self) -> None:
        self.wall: defaultdict[str, float] = defaultdict(float)
        self.database: defaultdict[str, float] = defaultdict(float)
        self.broker: defaultdict[str, float] = defaultdict(float)
        self.open: list[str] = []

    def phase(self, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            self.open.append(label)
            begin = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.wall[label] += time.perf_counter() - begin
                self.open.pop()

        return timed

    def waited(self, into: defaultdict[str, float], function: Callable[..., Any]) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            begin = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent = time.perf_counter() - begin
                for label in set(self.open):
                    into[label] += spent

        return timed


def _resolve(module: str, name: str) -> tuple[Any, str, Any]:
    owner: Any = sys.modules[module]
    *path, attribute = name.split(".")
    for part in path:
        owner = getattr(owner, part)
    return owner, attribute, getattr(owner, attribute)


@contextmanager
def installed(clocks: Clocks) -> Iterator[None]:
    """The timers in place (every module that imported a phase's function by name included),
    taken out afterwards."""
    import redis.connection
    from django.db import connection

    undo: list[tuple[Any, str, Any]] = []

    def replace(owner: Any, attribute: str, value: Any) -> None:
        undo.append((owner, attribute, getattr(owner, attribute)))
        setattr(owner, attribute, value)

    for label, module, name in PHASES:
        owner, attribute, original = _resolve(module, name)
        timed = clocks.phase(label, original)
        replace(owner, attribute, timed)
        if "." not in name:  # a function: also where it was imported by name
            for other in list(sys.modules.values()):
                if other is not owner and getattr(other, attribute, None) is original:
                    replace(other, attribute, timed)
    for method in ("send_packed_command", "read_response"):
        original = getattr(redis.connection.Connection, method)
        replace(redis.connection.Connection, method, clocks.waited(clocks.broker, original))

    def statement(execute: Callable[..., Any], *args: Any) -> Any:
        return clocks.waited(clocks.database, execute)(*args)

    # A transaction's COMMIT (the write-ahead log flushed) goes through the connection, not
    # a cursor: without this its wait was counted as Python.
    replace(connection, "_commit", clocks.waited(clocks.database, connection._commit))
    connection.execute_wrappers.append(statement)
    try:
        yield
    finally:
        connection.execute_wrappers.remove(statement)
        for owner, attribute, value in reversed(undo):
            setattr(owner, attribute, value)


def budget_burst(size: int, at: datetime, repeats: int = 5) -> dict[str, Any]:
    """``repeats`` bursts of ``size`` due at ``at`` through a running ticker, timed by phase:
    the median burst's microseconds per slot, split into PostgreSQL, broker and Python."""
    from bench.scale.drivers.ours import running_ticker

    runs = []
    for _ in range(repeats):
        set_due(size, at)
        ticker = running_ticker(at)
        clocks = Clocks()
        with installed(clocks):
            published = ticker.tick().published
        runs.append((clocks.wall["tick (all)"], clocks, published))
    runs.sort(key=lambda run: run[0])
    wall, clocks, published = runs[len(runs) // 2]
    return {
        "burst": size,
        "published": published,
        "wall_s": round(wall, 4),
        "rows": rows(clocks, published),
    }


def rows(clocks: Clocks, slots: int) -> list[dict[str, Any]]:
    """One row per phase (and derived row): µs per slot, wall and its three parts."""

    def split(wall: float, database: float, broker: float) -> dict[str, float]:
        per = 1e6 / max(slots, 1)
        return {
            "wall_us": round(wall * per, 1),
            "postgresql_us": round(database * per, 1),
            "broker_us": round(broker * per, 1),
            "python_us": round((wall - database - broker) * per, 1),
        }

    found = [
        {"phase": label, **split(clocks.wall[label], clocks.database[label], clocks.broker[label])}
        for label, _, _ in PHASES
    ]
    for label, (whole, parts) in DERIVED.items():
        found.append(
            {
                "phase": label,
                **split(
                    clocks.wall[whole] - sum(clocks.wall[part] for part in parts),
                    clocks.database[whole] - sum(clocks.database[part] for part in parts),
                    clocks.broker[whole] - sum(clocks.broker[part] for part in parts),
                ),
            }
        )
    return found
