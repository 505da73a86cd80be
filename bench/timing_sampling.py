"""How ``bench.timing`` samples: every call timed alone at its own instant with the garbage
collector off, the engine's memo caches cleared before it ("cold") or primed by the same call
("warm"), the cases interleaved round by round; and the enumeration of a year's slots."""

from __future__ import annotations

import gc
import importlib
import pkgutil
import random
import statistics
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import Any

import scheduler_app.timing as engine
from bench import report
from bench.timing_cases import (
    ENUMERATE_EXPECTED,
    ENUMERATE_RULE,
    TARGET_ENUMERATE_S,
    YEAR,
    ZONE,
    ZONE_NAME,
    Call,
    Case,
)
from scheduler_app.timing import build_timing, iter_slots, slots_between

# Per-zone data (the loaded zone, its DST transitions per year) is shared by every schedule
# in that zone and stays warm in a running scheduler: "cold" keeps it.
ZONE_CACHES = {"_load_zone", "_transition_marks"}


def engine_caches() -> list[Any]:
    """The engine's per-rule ``functools`` caches (cleared for "cold" samples)."""
    found: dict[int, Any] = {}
    for info in pkgutil.iter_modules(engine.__path__):
        module = importlib.import_module(f"{engine.__name__}.{info.name}")
        for name, value in vars(module).items():
            if name in ZONE_CACHES:
                continue
            if callable(getattr(value, "cache_clear", None)):
                found[id(value)] = value
    return list(found.values())


CACHES = engine_caches()


def clear_caches() -> None:
    for cache in CACHES:
        cache.cache_clear()


def spread_instants(count: int, rng: random.Random) -> list[datetime]:
    """``count`` distinct random UTC instants (microsecond resolution) spread over YEAR."""
    start = datetime(YEAR, 1, 1, tzinfo=ZONE).astimezone(UTC)
    span_us = int((datetime(YEAR + 1, 1, 1, tzinfo=ZONE) - start) / timedelta(microseconds=1))
    offsets = rng.sample(range(span_us), count)
    return [start + timedelta(microseconds=offset) for offset in offsets]


def timer_overhead_ns() -> int:
    samples = []
    for _ in range(10_000):
        begin = time.perf_counter_ns()
        samples.append(time.perf_counter_ns() - begin)
    return int(statistics.median(samples))


OVERHEAD_NS = timer_overhead_ns()


def sample(call: Call, calls: Sequence[tuple[Any, datetime]], *, cold: bool) -> list[float]:
    """Microseconds per call, one sample per (subject, instant) pair.

    ``cold``: the engine's memo caches are cleared before each call. Otherwise ("warm") the
    same call is made once, untimed, just before: the caches hold what it needs.
    """
    clock = time.perf_counter_ns
    samples: list[float] = []
    gc_was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for subject, instant in calls:
            if cold:
                clear_caches()
            else:
                call(subject, instant)
            begin = clock()
            call(subject, instant)
            elapsed = clock() - begin
            samples.append(max(elapsed - OVERHEAD_NS, 0) / 1000)
    finally:
        if gc_was_enabled:
            gc.enable()
    return samples


MODES = ("cold", "warm")


def measure(cases: Sequence[Case], warmup: list[datetime], rounds: list[list[datetime]]) -> None:
    """Sample every case in both modes, interleaved round by round, into ``case.result``.

    Interleaving spreads slow drifts of the machine (shared VMs change speed by tens of
    percent over seconds) evenly over all cases, so ratios between rows stay meaningful.
    """
    samples: dict[tuple[int, str], list[list[float]]] = {}
    for index, case in enumerate(cases):
        for mode in MODES:
            sample(case.call, [case.make(i) for i in _cut(case, warmup)], cold=mode == "cold")
            samples[index, mode] = []
    for chunk in rounds:
        for mode in MODES:
            for index, case in enumerate(cases):
                calls = [case.make(i) for i in _cut(case, chunk, len(rounds))]
                samples[index, mode].append(sample(case.call, calls, cold=mode == "cold"))
    for index, case in enumerate(cases):
        case.result = {"label": case.label}
        for mode in MODES:
            per_round = samples[index, mode]
            stats = report.summarize([value for chunk in per_round for value in chunk])
            stats["round_medians"] = [round(statistics.median(c), 3) for c in per_round]
            case.result[mode] = stats
        if case.target_us is not None:
            case.result["target_us"] = case.target_us
            case.result["met"] = case.result["cold"]["median"] <= case.target_us


def _cut(case: Case, instants: list[datetime], rounds: int = 4) -> list[datetime]:
    """The first instants of a round, for slow reference cases with ``max_samples``."""
    if case.max_samples is None:
        return instants
    return instants[: max(case.max_samples // rounds, 1)]


def measure_enumeration(repeats: int) -> list[dict[str, Any]]:
    timing = build_timing(kind="cron", rule=ENUMERATE_RULE, timezone=ZONE_NAME)
    tick = timedelta(microseconds=1)
    after = datetime(YEAR, 1, 1, tzinfo=ZONE) - tick
    until = datetime(YEAR + 1, 1, 1, tzinfo=ZONE) - tick

    def with_slots_between() -> int:
        return len(slots_between(timing, after, until))

    def with_iter_slots() -> int:
        slots = list(islice(iter_slots(timing, after), ENUMERATE_EXPECTED))
        if slots[-1] > until:
            raise AssertionError(f"iter_slots ran past the year: {slots[-1]}")
        return len(slots)

    results = []
    for label, run in (
        ("`slots_between(after, until)`", with_slots_between),
        (f"`islice(iter_slots(after), {ENUMERATE_EXPECTED})`", with_iter_slots),
    ):
        run()  # warm-up
        seconds = []
        count = 0
        for _ in range(repeats):
            clear_caches()
            begin = time.perf_counter()
            count = run()
            seconds.append(time.perf_counter() - begin)
        if count != ENUMERATE_EXPECTED:
            raise AssertionError(f"{label}: {count} slots, expected {ENUMERATE_EXPECTED}")
        stats = report.summarize(seconds)
        results.append(
            {
                "label": label,
                "rule": ENUMERATE_RULE,
                "slots": count,
                "seconds": stats,
                "us_per_slot": stats["median"] / count * 1e6,
                "target_s": TARGET_ENUMERATE_S,
                "met": stats["median"] <= TARGET_ENUMERATE_S,
            }
        )
    return results
