"""The burst as a user sees it: a real ``celery beat`` process per scheduler, from the due
instant until the last message is in the broker.

For each scheduler in turn: the size's schedules are made again for T, the next whole minute
at least ``LEAD_S`` ahead (cron and rrule rules fire on whole minutes); the first B are due at
T, the rest a day later; the scheduler's own ``celery beat`` is started (its output in a log
file) and has until T to start up; from T on, the parent polls the queue's length until B
messages more than just before T are in it, or the budget runs out. Ours, celery-redbeat and
django-celery-beat run one after the other, each with its own minute.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from bench import report
from bench.scale.env import SCHEDULERS, Child, celery_command, queue_counter

LEAD_S = 15.0
"""At least this long (plus ``lead_for(size)``'s allowance for making the schedules) between
starting to make the schedules and T: the beat's start-up fits in it."""
POLL_S = 0.01

BEAT_CLASSES = {
    "ours": "scheduler_app.beat:DurableScheduler",
    "redbeat": "redbeat.RedBeatScheduler",
    "dcb": "django_celery_beat.schedulers:DatabaseScheduler",
}


def next_minute(after: datetime) -> datetime:
    """The first whole minute at or after ``after``."""
    whole = after.replace(second=0, microsecond=0)
    return whole if whole == after else whole + timedelta(minutes=1)


def lead_for(size: int, which: str = "ours") -> float:
    """Seconds from starting to make ``size`` schedules to T: making them (about 4,000 a
    second in both tables) and ``LEAD_S`` for the beat to start; django-celery-beat's beat
    also loads every row before its first tick (about 2,000 a second on a loaded machine)."""
    return LEAD_S + size / 2000 + (size / 1000 if which == "dcb" else 0)


def arrange(which: str, size: int, burst: int) -> datetime:
    """The size's schedules made for T (returned), the first ``burst`` due at T."""
    from bench.scale.drivers import redbeat
    from bench.scale.workload import create_schedules, set_due

    at = next_minute(datetime.now(UTC) + timedelta(seconds=lead_for(size, which)))
    create_schedules(size, at, dcb=which == "dcb")
    set_due(0 if which == "redbeat" else burst, at)
    if which == "redbeat":
        redbeat.load(size, at)
        redbeat.arrange(burst, at)
    if datetime.now(UTC) > at - timedelta(seconds=LEAD_S / 2):
        raise SystemExit(
            f"making {size:,} schedules left less than {LEAD_S / 2:g} s before T ="
            f" {at:%H:%M:%S} for the beat to start: raise LEAD_S in bench/scale/beatburst.py"
        )
    return at


def start_beat(which: str, label: str = "") -> Child:
    return Child(
        label or f"beat-burst-{which}",
        celery_command("-A", "project", "beat", "-S", BEAT_CLASSES[which], "--loglevel", "WARNING"),
    )


def sleep_until(moment: float) -> None:
    while (left := moment - time.time()) > 0:
        time.sleep(min(left, 0.5))


def watch(at: datetime, burst: int, budget: float, beat: Child) -> dict[str, Any]:
    """From ``at``, poll the queue until ``burst`` new messages are in it (or the budget)."""
    due = at.timestamp()
    with queue_counter() as count:
        sleep_until(due - 0.5)
        if beat.process.poll() is not None:
            raise SystemExit(f"{beat.label} exited before T:\n{beat.stderr_tail()}")
        baseline = count()  # sent at start-up (a cleanup entry), not the burst
        sleep_until(due)
        first = last = None
        sent = 0
        while time.time() < due + budget:
            sent = count() - baseline
            now = time.time()
            if sent > 0 and first is None:
                first = now - due
            if sent >= burst:
                last = now - due
                break
            time.sleep(POLL_S)
    return {
        "finished": last is not None,
        "seconds": last if last is not None else budget,
        "first_s": first,
        "sent": max(sent, 0),
        "baseline": baseline,
    }


def beat_burst(which: str, size: int, burst: int, budget: float) -> dict[str, Any]:
    at = arrange(which, size, burst)
    if which == "redbeat":
        from bench.scale.drivers import redbeat

        redbeat.prepare()
    beat = start_beat(which)
    try:
        result = watch(at, burst, budget, beat)
    finally:
        beat.stop()
    return result | {"at": at.isoformat(), "log": str(beat.err_path)}


def beat_samples(
    size: int, schedulers: list[str], repeats: int, budgets: dict[str, float]
) -> dict[str, Any]:
    """Every scheduler's real-beat burst of 1,000 (or the size) at this size: scheduler ->
    summary."""
    burst = min(size, 1000)
    results: dict[str, Any] = {}
    for which in schedulers:
        runs = []
        for _ in range(repeats):
            print(f"  {SCHEDULERS[which]}: real beat, burst {burst:,} ...", flush=True)
            run = beat_burst(which, size, burst, budgets[which])
            runs.append(run)
            first = run["first_s"]
            print(
                f"    {'done' if run['finished'] else 'DNF'}: {run['sent']:,} in"
                f" {run['seconds']:.3f} s after T (first after"
                f" {'-' if first is None else f'{first:.3f}'} s)",
                flush=True,
            )
            if not run["finished"]:
                break
        results[which] = summarize(burst, budgets[which], runs)
    return results


def summarize(burst: int, budget: float, runs: list[dict[str, Any]]) -> dict[str, Any]:
    summary: dict[str, Any] = {"burst": burst, "budget_s": budget, "runs": runs}
    firsts = [r["first_s"] for r in runs if r["first_s"] is not None]
    if firsts:
        summary["first_s"] = report.summarize(firsts)
    if all(r["finished"] for r in runs):
        summary["finished"] = True
        summary["seconds"] = report.summarize([r["seconds"] for r in runs])
        summary["per_second"] = round(burst / max(summary["seconds"]["median"], 1e-9), 1)
    else:
        summary["finished"] = False
        summary["sent_within_budget"] = runs[-1]["sent"]
        summary["per_second"] = round(runs[-1]["sent"] / budget, 1)
    return summary
