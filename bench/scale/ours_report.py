"""The report's sections measured for this project alone (``bench.scale.render`` places them):
dispatch lateness, sustained occurrences per second, worker overhead, the budget per slot and
where a burst's time goes."""

from __future__ import annotations

from typing import Any

from bench import report
from bench.scale.cells import cell, stat
from bench.scale.judge import duplicates
from bench.scale.texts import LIMITS


def ours_only(title: str, intro: str, rows: list[list[str]], limit: str) -> str:
    table = report.markdown_table(["figure (median, min-max over runs)", "this project"], rows)
    return f"### {title}\n\n{intro}\n\n{table}\n\n{limit}"


def lateness_text(lateness: dict[str, Any] | None) -> list[str]:
    if not lateness:
        return []
    rows = [
        [f"dispatch lateness {label}, s", cell(lateness, key)]
        for key, label in (("p50_s", "p50"), ("p95_s", "p95"), ("p99_s", "p99"), ("max_s", "max"))
    ]
    rows += [
        [label, stat(lateness, key, fmt="{:,.0f}")]
        for key, label in (
            ("expected", "slots due in the window"),
            ("materialized", "occurrences created for them"),
            ("dispatched", "dispatched"),
        )
    ]
    rate = lateness["rate_per_minute"]
    intro = (
        f"A real `celery beat -S scheduler_app.beat:DurableScheduler` process (its output in a"
        f" log file); {rate:,} interval schedules of 1 min (UTC, fixed rate, overlap `allow`)"
        f" with anchors staggered evenly over the minute ({rate / 60:,.0f} slots due every"
        f" second). Every slot due in a window of {lateness['duration_s']:g} s, starting"
        f" {lateness.get('lead_s', 15):g} s after the beat is launched, counts; lateness ="
        " `dispatched_at - scheduled_for` (`dispatched_at` is taken after the batch is"
        f" published: an upper bound). {len(lateness['runs'])} runs. celery-redbeat and"
        " django-celery-beat record no dispatch time per slot: not measured for them."
    )
    return [
        ours_only(
            f"Dispatch lateness at {rate:,} slots per minute",
            intro,
            rows,
            LIMITS["lateness"],
        )
    ]


def sustained_text(sustained: dict[str, Any] | None, raw: dict[str, Any]) -> list[str]:
    if not sustained:
        return []
    rows = [
        ["one beat, occurrences/s", stat(sustained, "one", fmt="{:,.0f}")],
        ["two beats together, occurrences/s", stat(sustained, "two", fmt="{:,.0f}")],
        ["two beats / one beat", stat(sustained, "ratio", fmt="{:.2f}x")],
        ["messages beyond one per occurrence (duplicates), all runs", str(duplicates(sustained))],
    ]
    if "two_per_beat" in sustained:  # the first harness's Ticker processes
        rows.insert(2, ["two beats: each beat, occurrences/s", stat(sustained, "two_per_beat")])
    if raw.get("apply_async"):
        rows.append(
            [
                "raw `apply_async` loop of the same run, /s",
                stat(raw["apply_async"], "per_second", fmt="{:,.0f}"),
            ]
        )
    if sustained.get("real_beats"):
        how = (
            "one, then two real `celery beat -S scheduler_app.beat:DurableScheduler` processes"
            " on the same database (their output in log files), started before the backlog"
            " comes due at T, a whole minute; occurrences/s = dispatched / (last"
            " `dispatched_at` - T)"
        )
    else:
        how = (
            "one `Ticker` + `CeleryPublisher` process per beat, real clock, started together;"
            " occurrences/s = dispatched / (last `dispatched_at` - start)"
        )
    intro = (
        f"A backlog of {sustained['backlog']:,} schedules due at once (the sizes' mix of kinds"
        f" and zones); {how}, materialization included, at most {sustained['cap_s']:g} s; both"
        " beats claim with `FOR UPDATE SKIP LOCKED`. One and two beats interleaved,"
        f" {sustained['one']['n']} run(s) each."
        + ("" if sustained["finished"] else " Some runs hit the cap (see JSON).")
    )
    return [ours_only("Sustained occurrences per second", intro, rows, LIMITS["sustained"])]


def worker_text(worker: dict[str, Any] | None) -> list[str]:
    if not worker or "occurrence" not in worker or "plain" not in worker:
        return []
    labels = (
        ("per_second", "executed per second", "{:,.0f}"),
        ("ms_per_task", "ms per task (first start to last end / tasks)", "{:.3f}"),
        ("median_gap_ms", "ms per task, median (one task end to the next)", "{:.3f}"),
        ("max_gap_ms", "longest pause between two tasks, ms", "{:,.0f}"),
        ("queries_per_task", "SQL queries per task", "{:.2f}"),
    )
    rows = [
        [label, stat(worker["occurrence"], key, fmt=fmt), stat(worker["plain"], key, fmt=fmt)]
        for key, label, fmt in labels
    ]
    rows.append(
        [
            "overhead of `OccurrenceTask`: ms / queries per task"
            + (" (from the medians)" if worker.get("overhead_basis") == "median_gap_ms" else ""),
            f"{worker['overhead_ms']:+.3f} ms / {worker['overhead_queries']:+.2f}",
            "-",
        ]
    )
    table = report.markdown_table(
        ["figure (median, min-max over runs)", "`OccurrenceTask` occurrence", "plain Celery task"],
        rows,
    )
    runs = len(worker["runs"]["plain"])
    intro = (
        f"One `celery worker --pool solo` process (one worker process), {worker['tasks']:,}"
        " no-op tasks waiting in the broker before it starts: occurrences published by our engine"
        " (the `scheduler` header set) and the same number of plain `apply_async` messages;"
        " both store their result with the project's `django-db` result backend. Timed from"
        " the first task's start to the last one's end (`task_prerun` / `task_postrun` in the"
        f" worker), queries counted in the worker's main thread; {runs} run(s) each, interleaved."
    )
    parts = [f"### Worker overhead\n\n{intro}\n\n{table}"]
    if statements := statements_table(worker.get("statements") or {}):
        parts.append(statements)
    return [*parts, LIMITS["worker"]]


def statements_table(statements: dict[str, dict[str, float]]) -> str:
    """SQL statements per task by verb and table, both kinds side by side (the last run)."""
    occurrence, plain = statements.get("occurrence", {}), statements.get("plain", {})
    shapes = sorted(set(occurrence) | set(plain), key=lambda k: -occurrence.get(k, 0))
    if not shapes:
        return ""
    rows = [
        [f"`{shape}`", f"{occurrence.get(shape, 0):g}", f"{plain.get(shape, 0):g}"]
        for shape in shapes
    ]
    header = ["SQL statements per task (last run)", "`OccurrenceTask` occurrence", "plain"]
    return report.markdown_table(header, rows)


def budget_text(profile: dict[str, Any] | None, worker: dict[str, Any] | None) -> list[str]:
    """The budget per slot (issue 39): µs per occurrence by phase, split into PostgreSQL, the
    broker and Python; and per delivery for the worker."""
    budget = (profile or {}).get("budget")
    if not budget:
        return []
    rows = [
        [
            row["phase"],
            f"{row['wall_us']:,.1f}",
            f"{row['postgresql_us']:,.1f}",
            f"{row['broker_us']:,.1f}",
            f"{row['python_us']:,.1f}",
        ]
        for row in budget["rows"]
    ]
    parts = [
        "### Budget per slot",
        f"One burst of {budget['burst']:,} at {profile['size']:,} schedules"  # type: ignore[index]
        f" ({budget['wall_s']:.3f} s, the median of five), timed by phase without a profiler"
        " (`bench/scale/budget.py`): microseconds per published slot, and of them the time"
        " its statements waited on PostgreSQL (the statement sent, run and its rows received;"
        " a transaction's COMMIT included),"
        " the time it waited on the broker, and the rest, Python (psycopg's decoding of the rows"
        " the ORM fetches included). To reach 0.1 s for 1,000 slots a slot has 100 µs in all.",
        report.markdown_table(["phase", "µs per slot", "PostgreSQL", "broker", "Python"], rows),
    ]
    kinds = worker or {}
    if "occurrence" in kinds and "plain" in kinds and "sql_ms_per_task" in kinds["occurrence"]:
        basis = kinds.get("overhead_basis", "ms_per_task")
        per = {
            kind: (kinds[kind][basis]["median"], kinds[kind]["sql_ms_per_task"]["median"])
            for kind in ("occurrence", "plain")
        }
        worker_rows = [
            [
                label,
                f"{per[kind][0] * 1000:,.0f}",
                f"{per[kind][1] * 1000:,.0f}",
                f"{(per[kind][0] - per[kind][1]) * 1000:,.0f}",
            ]
            for kind, label in (
                ("occurrence", "`OccurrenceTask` (scheduled occurrence)"),
                ("plain", "plain Celery task"),
            )
        ]
        (ours_ms, ours_sql), (plain_ms, plain_sql) = per["occurrence"], per["plain"]
        worker_rows.append(
            [
                "the difference",
                f"{(ours_ms - plain_ms) * 1000:+,.0f}",
                f"{(ours_sql - plain_sql) * 1000:+,.0f}",
                f"{((ours_ms - ours_sql) - (plain_ms - plain_sql)) * 1000:+,.0f}",
            ]
        )
        parts += [
            "Per delivery, in the worker (the worker figure's runs: the median time per task,"
            " and the time its statements waited on PostgreSQL; the rest is the worker's loop,"
            " the broker and Python):",
            report.markdown_table(
                ["delivery", "µs per task", "PostgreSQL", "the rest"], worker_rows
            ),
        ]
    return parts


def profile_text(profile: dict[str, Any] | None, top: int = 15) -> list[str]:
    if not profile:
        return []
    rows = [
        [
            row["phase"].replace("  ", "&nbsp;&nbsp;"),
            f"{row['seconds']:.3f}",
            f"{row['us_per_slot']:,.0f}",
        ]
        for row in profile["phases"]
    ]
    lines = profile.get("top_own_time") or []
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), None)
    listing = lines[start : start + top + 1] if start is not None else []
    parts = [
        "### Where our burst time goes",
        f"cProfile of one burst of {profile['burst']:,} at {profile['size']:,} schedules"
        f" ({profile['wall_s']:.2f} s under the profiler, which inflates many small Python"
        " calls: read it as a ranking). Cumulative time per phase, divided by the slots"
        " published:",
        report.markdown_table(["phase", "s", "µs per slot"], rows),
    ]
    if listing:
        parts += [
            f"Top {top} functions by own time:",
            "```text\n" + "\n".join(line.rstrip() for line in listing) + "\n```",
        ]
    return parts
