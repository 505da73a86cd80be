"""Figures in real time, with real processes: dispatch lateness of a real ``celery beat`` under a
steady load, and sustained occurrences per second of one and two beats.

Every process writes to its own log file (``bench.scale.env.Child``); the tails of the beats'
stderr (warnings, errors) go into the results.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from bench import report
from bench.scale.env import Child, celery_command, clear_broker, queued
from bench.scale.workload import create_steady, slots_between, truncate_all

LEAD_S = 15.0
"""The window starts this long after the beat is launched (start-up is not lateness)."""
GRACE_S = 5.0
"""The beat runs this long after the window, for the window's last slots."""


def start_beat() -> Child:
    """A real ``celery beat -S scheduler_app.beat:DurableScheduler``, logging to a file."""
    return Child(
        "beat",
        celery_command(
            "-A",
            "project",
            "beat",
            "-S",
            "scheduler_app.beat:DurableScheduler",
            "--loglevel",
            "WARNING",
        ),
    )


def lateness_run(rate: int, duration: float, lead: float = LEAD_S) -> dict[str, Any]:
    """One run: a real beat for ``lead + duration`` s over ``rate`` slots per minute; the
    lateness of every slot due in the window: ``dispatched_at - scheduled_for``."""
    from scheduler_app.models import Occurrence

    start = datetime.now(UTC) + timedelta(seconds=lead)
    anchors = create_steady(rate, start)
    clear_broker()
    end = start + timedelta(seconds=duration)
    expected = sum(slots_between(anchor, start, end) for anchor in anchors)
    beat = start_beat()
    try:
        time.sleep(max((end - datetime.now(UTC)).total_seconds(), 0) + GRACE_S)
    finally:
        beat.stop()
    rows = list(
        Occurrence.objects.filter(scheduled_for__gte=start, scheduled_for__lt=end).values_list(
            "scheduled_for", "dispatched_at"
        )
    )
    late = [(d - s).total_seconds() for s, d in rows if d is not None]
    result: dict[str, Any] = {
        "expected": expected,
        "materialized": len(rows),
        "dispatched": len(late),
        "queued": queued(),
        "log": str(beat.err_path),
        "stderr_tail": errors_in(beat.stderr_tail(20_000)),
    }
    if late:
        result |= {f"p{int(q * 100)}_s": report.percentile(late, q) for q in (0.5, 0.95, 0.99)}
        result |= {"max_s": max(late), "min_s": min(late)}
    return result


def errors_in(log: str, limit: int = 20) -> list[str]:
    """The WARNING / ERROR / CRITICAL lines of a log (at most ``limit``, the last ones)."""
    lines = [line for line in log.splitlines() if any(level in line for level in LEVELS)]
    return lines[-limit:]


LEVELS = ("WARNING", "ERROR", "CRITICAL", "Traceback")


def lateness_samples(repeats: int, rate: int, duration: float) -> dict[str, Any]:
    runs = []
    for _ in range(repeats):
        run = lateness_run(rate, duration)
        runs.append(run)
        print(
            f"  lateness: {run['dispatched']:,}/{run['expected']:,} dispatched,"
            f" p50 {run.get('p50_s', float('nan')):.3f} s, p99 {run.get('p99_s', float('nan')):.3f}"
            f" s, max {run.get('max_s', float('nan')):.3f} s (log: {run['log']})",
            flush=True,
        )
    truncate_all()
    done = [r for r in runs if "p50_s" in r]
    summary: dict[str, Any] = {
        "rate_per_minute": rate,
        "duration_s": duration,
        "lead_s": LEAD_S,
        "runs": runs,
    }
    for key in ("p50_s", "p95_s", "p99_s", "max_s"):
        if done:
            summary[key] = report.summarize([r[key] for r in done])
    for key in ("expected", "materialized", "dispatched"):
        summary[key] = report.summarize([r[key] for r in runs], 0)
    return summary


POLL_S = 0.25


def sustained_run(beats: int, backlog: int, cap: float) -> dict[str, Any]:
    """``beats`` real ``celery beat`` processes on one database, started before the backlog
    comes due at T (a whole minute); from T until every occurrence is dispatched."""
    from django.db.models import Max

    from bench.scale.beatburst import arrange, sleep_until, start_beat
    from scheduler_app.models import Occurrence

    at = arrange("ours", backlog, backlog)
    children = [start_beat("ours", label=f"sustain-{beats}") for _ in range(beats)]
    dispatched = Occurrence.objects.filter(dispatched_at__isnull=False)
    try:
        sleep_until(at.timestamp())
        for child in children:
            if child.process.poll() is not None:
                raise SystemExit(f"{child.label} exited before T:\n{child.stderr_tail()}")
        deadline = at.timestamp() + cap
        while dispatched.count() < backlog and time.time() < deadline:
            time.sleep(POLL_S)
    finally:
        for child in children:
            child.stop()
    count = dispatched.count()
    last = dispatched.aggregate(Max("dispatched_at"))["dispatched_at__max"]
    elapsed = (last - at).total_seconds() if last else cap
    return {
        "beats": beats,
        "backlog": backlog,
        "at": at.isoformat(),
        "dispatched": count,
        "queued": queued(),
        "republished": Occurrence.objects.filter(publish_count__gt=1).count(),
        "finished": count >= backlog,
        "seconds": elapsed,
        "per_second": count / max(elapsed, 1e-9),
        "logs": [str(child.err_path) for child in children],
        "stderr_tail": [line for child in children for line in errors_in(child.stderr_tail())],
    }


def sustained_samples(repeats: int, backlog: int, seconds: float) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {"1": [], "2": []}
    for _ in range(repeats):
        for beats in (1, 2):  # interleaved: drifts hit both alike
            print(f"  sustained, {beats} real beat(s), backlog {backlog:,} ...", flush=True)
            run = sustained_run(beats, backlog, seconds)
            runs[str(beats)].append(run)
            print(
                f"    {run['dispatched']:,} in {run['seconds']:.1f} s after T"
                f" = {run['per_second']:,.0f}/s",
                flush=True,
            )
    truncate_all()
    ratios = [
        two["per_second"] / one["per_second"] for one, two in zip(runs["1"], runs["2"], strict=True)
    ]
    return {
        "backlog": backlog,
        "cap_s": seconds,
        "real_beats": True,
        "one": report.summarize([r["per_second"] for r in runs["1"]], 1),
        "two": report.summarize([r["per_second"] for r in runs["2"]], 1),
        "ratio": report.summarize(ratios, 2),
        "finished": all(r["finished"] for rs in runs.values() for r in rs),
        "runs": runs,
    }
