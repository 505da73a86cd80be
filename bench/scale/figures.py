"""The per-size figures, sampled for each scheduler: start-up and idle ticks (a fresh process per
sample), bursts, and our simulated hour (RSS)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from bench import report
from bench.scale.env import KINDS, queued, run_child
from bench.scale.workload import arrange_soak, restore_soak

BURSTS = (1000, 10_000, 100_000)


def startup_samples(which: str, repeats: int, ticks: int, budget: float) -> dict[str, Any]:
    """``repeats`` fresh processes, each building the scheduler and ticking; a process that
    overruns ``budget`` s or fails ends the samples (reported as not finished)."""
    runs = []
    for _ in range(repeats):
        result = run_child(f"startup-{which}", which, "--ticks", str(ticks), timeout=budget)
        if not result.get("finished", True):
            if which == "ours" and "error" in result:
                raise SystemExit(f"child {which} failed:\n{result['error']}")
            return result
        runs.append(result)
    return summarize_startup(runs)


def summarize_startup(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians and spreads of start-up samples (each a child's result)."""

    def pooled(key: str) -> list[float]:
        return [value for run in runs for value in run.get(key, [])]

    def spread(values: list[float]) -> dict[str, int]:
        return {"min": int(min(values)), "max": int(max(values)), "n": len(values)}

    summary: dict[str, Any] = {
        "finished": True,
        "startup_s": report.summarize([r["startup_s"] for r in runs]),
        "construct_s": report.summarize([r["construct_s"] for r in runs]),
        "first_tick_s": report.summarize([r["first_tick_s"] for r in runs]),
        "import_setup_s": report.summarize([r["import_setup_s"] for r in runs]),
        **(
            {"process_start_s": report.summarize([r["process_start_s"] for r in runs])}
            if all("process_start_s" in r for r in runs)
            else {}
        ),
        "rss_mib": report.summarize([r["rss_mib"] for r in runs], 1),
        "peak_rss_mib": report.summarize([r["peak_rss_mib"] for r in runs], 1),
        "idle_tick_ms": report.summarize(pooled("idle_tick_ms"), 3),
        "idle_tick_queries": spread(pooled("idle_tick_queries")),
    }
    if redis_calls := pooled("idle_tick_redis"):
        summary["idle_tick_redis"] = spread(redis_calls)
    if bare := pooled("ticker_idle_tick_ms"):
        summary["ticker_idle_tick_ms"] = report.summarize(bare, 3)
    return summary


def bursts_for(size: int) -> list[int]:
    """Bursts of 1,000, 10,000 and 100,000 where the size allows (the size itself if smaller)."""
    return [burst for burst in BURSTS if burst <= size] or [size]


def burst_samples(
    run: Callable[[int, datetime, float], dict[str, Any]],
    burst: int,
    at: datetime,
    repeats: int,
    budget: float,
) -> dict[str, Any]:
    """Repeat a burst; one that does not finish within the budget is not repeated."""
    runs = []
    for _ in range(repeats):
        result = run(burst, at, budget)
        runs.append(result)
        print(
            f"    burst {burst:,}: {'done' if result['finished'] else 'DNF'}"
            f" {result['sent']:,} sent in {result['seconds']:.2f} s",
            flush=True,
        )
        if not result["finished"]:
            break
    return summarize_bursts(burst, budget, runs)


def summarize_bursts(burst: int, budget: float, runs: list[dict[str, Any]]) -> dict[str, Any]:
    summary: dict[str, Any] = {"burst": burst, "budget_s": budget, "runs": runs}
    if all(r["finished"] for r in runs):
        summary["finished"] = True
        summary["seconds"] = report.summarize([r["seconds"] for r in runs])
        summary["per_second"] = round(burst / max(summary["seconds"]["median"], 1e-9), 1)
    else:
        last = runs[-1]
        summary["finished"] = False
        summary["sent_within_budget"] = last["sent"]
        summary["per_second"] = round(last["sent"] / max(last["seconds"], 1e-9), 1)
    return summary


def soak_samples(
    size: int, at: datetime, repeats: int, due: int, hour: float, budget: float
) -> dict[str, Any]:
    """Our RSS through a simulated hour, a fresh process per sample."""
    due = min(due, size // len(KINDS))
    runs = []
    for _ in range(repeats):
        arranged = arrange_soak(due, at, hour)
        begin = time.perf_counter()
        result = run_child(
            "soak", "soak", "--at", at.isoformat(), "--hour", str(hour), timeout=budget
        )
        if not result.get("finished", True):
            if "error" in result:
                print(f"    soak child failed:\n{result['error']}", flush=True)
            restore_soak(at)
            return {**result, "due": due}
        result["queued"] = queued()
        result["arranged"] = arranged
        result["process_s"] = time.perf_counter() - begin
        runs.append(result)
        print(
            f"    soak: RSS {result['rss_start_mib']:.0f} -> {result['rss_end_mib']:.0f} MiB"
            f" (max {result['rss_max_mib']:.0f}), {result['ticks']:,} ticks,"
            f" {result['published']:,} published, {result['wall_s']:.0f} s",
            flush=True,
        )
    restore_soak(at)
    return {
        "finished": True,
        "due": due,
        "hour_s": hour,
        "rss_start_mib": report.summarize([r["rss_start_mib"] for r in runs], 1),
        "rss_end_mib": report.summarize([r["rss_end_mib"] for r in runs], 1),
        "rss_max_mib": report.summarize([r["rss_max_mib"] for r in runs], 1),
        "ticks": report.summarize([r["ticks"] for r in runs], 0),
        "wall_s": report.summarize([r["wall_s"] for r in runs], 1),
        "runs": runs,
    }
