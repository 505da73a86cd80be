"""Issue 16's targets, each with what the run measured and a verdict (``met`` None: not
measured in this run). Pure: reads only the results payload."""

from __future__ import annotations

from typing import Any

from bench import report

TARGETS = {
    "burst_1000_s": 0.1,
    "burst_1000_vs_redbeat": 20.0,
    "burst_100000_s": 10.0,
    "sustained_per_s": 10_000.0,
    "two_beats_ratio": 1.6,
    "idle_tick_queries": 2,
    "startup_s": 0.2,
    "rss_mib": 80.0,
    "lateness_rate_per_minute": 60_000,
    "lateness_p99_s": 0.5,
    "worker_overhead_ms": 2.0,
    "worker_queries": 3.0,
}


def verdict(met: bool | None) -> str:
    if met is None:
        return "-"
    return "met" if met else "**missed**"


def _measured(target: str, text: str, met: bool | None) -> dict[str, Any]:
    return {"target": target, "measured": text, "met": met}


def _not_measured(target: str) -> dict[str, Any]:
    return _measured(target, "not measured", None)


def _per_size(
    sizes: list[dict[str, Any]], which: str, figure: str, key: str, stat: str
) -> list[tuple[int, float]]:
    values = []
    for entry in sizes:
        summary = entry.get(which, {}).get(figure)
        if summary and summary.get("finished", True) and key in summary:
            values.append((entry["size"], summary[key][stat]))
    return values


def _flat(
    sizes: list[dict[str, Any]], target: str, key: str, stat: str, fmt: str, limit: float
) -> dict[str, Any]:
    measured = _per_size(sizes, "ours", "startup", key, stat)
    if not measured:
        return _not_measured(target)
    text = " / ".join(fmt.format(v) for _, v in measured)
    text += " at " + ", ".join(f"{n:,}" for n, _ in measured) + " schedules"
    return _measured(target, text, max(v for _, v in measured) <= limit)


def _burst(entry: dict[str, Any], which: str, burst: int) -> dict[str, Any] | None:
    found: dict[str, Any] | None = entry.get(which, {}).get("bursts", {}).get(str(burst))
    return found


def _seconds(summary: dict[str, Any] | None) -> float | None:
    """The median of a finished burst, else None."""
    if summary is None or not summary["finished"]:
        return None
    return float(summary["seconds"]["median"])


def _time_limit(target: str, summary: dict[str, Any], limit: float) -> dict[str, Any]:
    seconds = _seconds(summary)
    text = f"{seconds:.3f} s" if seconds is not None else "did not finish"
    return _measured(target, text, seconds is not None and seconds <= limit)


def _versus_redbeat(target: str, seconds: float, redbeat: dict[str, Any]) -> dict[str, Any]:
    theirs = _seconds(redbeat)
    if theirs is not None:
        ratio = theirs / seconds
        text = f"{ratio:.1f}x ({theirs:.3f} s / {seconds:.3f} s)"
    else:
        ratio = redbeat["budget_s"] / seconds
        text = f"> {ratio:.1f}x (celery-redbeat did not finish)"
    return _measured(target, text, ratio >= TARGETS["burst_1000_vs_redbeat"])


def burst_verdicts(sizes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    verdicts = []
    for entry in sizes:
        ours, redbeat = _burst(entry, "ours", 1000), _burst(entry, "redbeat", 1000)
        size = f"{entry['size']:,} stored"
        if ours is not None:
            verdicts.append(
                _time_limit(f"burst of 1,000 <= 0.1 s ({size})", ours, TARGETS["burst_1000_s"])
            )
            seconds = _seconds(ours)
            if seconds is not None and redbeat is not None:
                target = f"burst of 1,000 >= 20x faster than celery-redbeat ({size})"
                verdicts.append(_versus_redbeat(target, seconds, redbeat))
        real, real_redbeat = entry.get("ours", {}).get("beat"), entry.get("redbeat", {}).get("beat")
        if real is not None:
            target = f"burst of {real['burst']:,} from a real beat <= 0.1 s ({size})"
            verdicts.append(_time_limit(target, real, TARGETS["burst_1000_s"]))
            seconds = _seconds(real)
            if seconds is not None and real_redbeat is not None:
                target = (
                    f"real beats: burst of {real['burst']:,} >= 20x faster than celery-redbeat"
                    f" ({size})"
                )
                verdicts.append(_versus_redbeat(target, seconds, real_redbeat))
        big = _burst(entry, "ours", 100_000)
        if big is not None:
            target = f"burst of 100,000 <= 10 s ({size})"
            verdicts.append(_time_limit(target, big, TARGETS["burst_100000_s"]))
    return verdicts or [_not_measured("burst of 1,000 <= 0.1 s, >= 20x celery-redbeat")]


def idle_verdict(sizes: list[dict[str, Any]]) -> dict[str, Any]:
    target = "idle tick <= celery-redbeat's in the same run"
    ours = dict(_per_size(sizes, "ours", "startup", "idle_tick_ms", "median"))
    theirs = dict(_per_size(sizes, "redbeat", "startup", "idle_tick_ms", "median"))
    common = sorted(set(ours) & set(theirs))
    if not common:
        return _not_measured(target)
    text = ", ".join(f"{ours[n]:.2f} vs {theirs[n]:.2f} ms at {n:,}" for n in common)
    return _measured(target, text, all(ours[n] <= theirs[n] for n in common))


def duplicates(sustained: dict[str, Any]) -> int:
    """Messages in the broker beyond one per dispatched occurrence, or occurrences published
    more than once, whichever is more, summed over the runs."""
    return sum(
        max(run.get("queued", 0) - run["dispatched"], run.get("republished", 0), 0)
        for runs in sustained["runs"].values()
        for run in runs
    )


def sustained_verdicts(sustained: dict[str, Any] | None) -> list[dict[str, Any]]:
    one_target = "one beat >= 10,000 occurrences/s"
    two_target = "two beats >= 1.6x one beat, 0 duplicates"
    if not sustained:
        return [_not_measured(one_target), _not_measured(two_target)]
    one = sustained["one"]["median"]
    ratio = sustained["ratio"]["median"]
    extra = duplicates(sustained)
    return [
        _measured(one_target, f"{one:,.0f}/s", one >= TARGETS["sustained_per_s"]),
        _measured(
            two_target,
            f"{sustained['two']['median']:,.0f}/s vs {one:,.0f}/s = {ratio:.2f}x;"
            f" {extra} duplicate messages",
            ratio >= TARGETS["two_beats_ratio"] and extra == 0,
        ),
    ]


def lateness_verdict(lateness: dict[str, Any] | None) -> dict[str, Any]:
    target = "p99 dispatch lateness <= 0.5 s at 1,000 slots/s (60,000 per minute)"
    if not lateness or "p99_s" not in lateness:
        return _not_measured(target)
    p99 = lateness["p99_s"]["median"]
    rate = lateness["rate_per_minute"]
    complete = all(run["dispatched"] >= run["expected"] for run in lateness["runs"])
    text = f"{p99:.3f} s at {rate:,} per minute (worst run {lateness['p99_s']['max']:.3f} s)"
    if not complete:
        text += "; not every slot of the window was dispatched"
    if rate < TARGETS["lateness_rate_per_minute"]:
        return _measured(target, text + "; a lower rate than the target's", None)
    return _measured(target, text, p99 <= TARGETS["lateness_p99_s"] and complete)


def worker_verdict(worker: dict[str, Any] | None) -> dict[str, Any]:
    target = "`OccurrenceTask` overhead <= 2 ms and <= 3 queries per occurrence"
    if not worker or "overhead_ms" not in worker:
        return _not_measured(target)
    queries = worker["occurrence"]["queries_per_task"]["median"]
    text = (
        f"{worker['overhead_ms']:+.3f} ms; {queries:.2f} queries per occurrence"
        f" ({worker['overhead_queries']:+.2f} over a plain task)"
    )
    met = worker["overhead_ms"] <= TARGETS["worker_overhead_ms"]
    return _measured(target, text, met and queries <= TARGETS["worker_queries"])


def judge(payload: dict[str, Any]) -> list[dict[str, Any]]:
    sizes = payload["sizes"]
    verdicts = burst_verdicts(sizes)
    verdicts += sustained_verdicts(payload.get("sustained"))
    verdicts += [
        idle_verdict(sizes),
        _flat(sizes, "idle tick <= 2 queries, flat", "idle_tick_queries", "max", "{}", 2),
        _flat(sizes, "start-up <= 0.2 s, flat in N", "startup_s", "median", "{:.3f} s", 0.2),
        _flat(
            sizes,
            "start-up from process start <= 0.2 s, flat in N (issue 16's definition)",
            "process_start_s",
            "median",
            "{:.3f} s",
            0.2,
        ),
        _flat(sizes, "RSS after start <= 80 MiB, flat in N", "rss_mib", "median", "{:.0f} MiB", 80),
    ]
    soaked = _per_size(sizes, "ours", "soak", "rss_max_mib", "median")
    verdicts.append(
        _measured(
            "RSS after an hour <= 80 MiB",
            " / ".join(f"{v:.0f} MiB at {n:,}" for n, v in soaked),
            max(v for _, v in soaked) <= TARGETS["rss_mib"],
        )
        if soaked
        else _not_measured("RSS after an hour <= 80 MiB")
    )
    verdicts.append(lateness_verdict(payload.get("lateness")))
    verdicts.append(worker_verdict(payload.get("worker")))
    return verdicts


def judge_text(verdicts: list[dict[str, Any]]) -> str:
    rows = [[v["target"], v["measured"], verdict(v["met"])] for v in verdicts]
    return report.markdown_table(["target", "measured", "result"], rows)
