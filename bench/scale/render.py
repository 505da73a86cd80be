"""The Markdown report of ``make bench``, rendered from the JSON results only.

One table per figure with the three schedulers side by side (this project, celery-redbeat,
django-celery-beat), the raw limits of the stack from the same run, the load average and commit,
and under each table what limits that figure. ``docs/performance.md``'s scale section is this
text: numbers there are never edited by hand (re-render with ``python -m bench.scale
--render-only``).
"""

from __future__ import annotations

from typing import Any

from bench import report
from bench.scale.env import HARNESS, NAME, SCHEDULERS, ZONES
from bench.scale.judge import duplicates, judge_text, verdict
from bench.scale.texts import DCB_SOAK_NOTE, LIMITS, OURS_PUBLISH, method_text

PARTS = ("raw", "startup", "burst", "soak", "profile", "beat", "lateness", "sustained", "worker")
LOADED = 0.5
"""A 1-minute load average at or above this (before the run, or after it minus the run's own
1) marks the figures as measured on a loaded machine."""


OLD_HARNESS = (
    "**From the first harness** (before `bench/scale/`): django-celery-beat only, no"
    " celery-redbeat, no worker figure, issue 6's targets re-judged against issue 16's. Its"
    " figures from real processes (dispatch lateness, a real `celery beat`) ran with the beat's"
    " stderr piped and never read, which blocks a beat once 64 KiB fill: rerun `make bench`"
    " for figures to rely on."
)


AMQP_NOTE = (
    "**On RabbitMQ**, with publisher confirms (`confirm_publish`): a message counts as"
    " published once the broker has confirmed it. Celery-redbeat keeps its entries in the"
    " bench's Redis db and publishes to RabbitMQ like the other two."
)


def stat(summary: dict[str, Any] | None, key: str, scale: float = 1.0, fmt: str = "{:.3f}") -> str:
    """``median (min-max)`` of ``summary[key]``, or ``-``."""
    if not summary or not summary.get("finished", True) or key not in summary:
        return "-"
    values = summary[key]
    med, low, high = (values[k] * scale for k in ("median", "min", "max"))
    if values.get("n", 2) == 1 or low == high:
        return fmt.format(med)
    return f"{fmt.format(med)} ({fmt.format(low)}-{fmt.format(high)})"


def dnf(summary: dict[str, Any] | None) -> str | None:
    """The cell text of a figure that was not measured or did not finish, else None."""
    if summary is None:
        return "not run"
    if summary.get("finished", True):
        return None
    if "note" in summary:
        return "not measured (see below)"
    if "error" in summary:
        return "failed (see JSON)"
    return f"did not finish in {summary['budget_s']:g} s"


def cell(summary: dict[str, Any] | None, key: str, fmt: str = "{:.3f}") -> str:
    return dnf(summary) or stat(summary, key, fmt=fmt)


def round_trips(summary: dict[str, Any] | None) -> str:
    """``SQL queries / Redis round trips`` per idle tick (a range when they varied)."""
    if summary is None or not summary.get("finished", True):
        return dnf(summary) or "-"

    def span(key: str) -> str:
        counts = summary.get(key)
        if counts is None:
            return "-"  # not counted (results of the first harness)
        low, high = counts["min"], counts["max"]
        return str(low) if low == high else f"{low}-{high}"

    return f"{span('idle_tick_queries')} / {span('idle_tick_redis')}"


def burst_cell(summary: dict[str, Any] | None) -> str:
    if summary is None:
        return "not run"
    if summary["finished"]:
        return f"{stat(summary, 'seconds')} ({summary['per_second']:,.0f}/s)"
    if summary["runs"][-1].get("build_unfinished"):
        return f"did not finish in {summary['budget_s']:g} s (still loading its schedule)"
    return (
        f"did not finish within {summary['budget_s']:g} s"
        f" ({summary['sent_within_budget']:,} of {summary['burst']:,} sent,"
        f" {summary['per_second']:,.0f}/s)"
    )


def loaded(facts: dict[str, Any]) -> bool:
    before, after = facts.get("load_before"), facts.get("load_after")
    if before is None or after is None:
        return False
    return bool(max(before, after - 1) >= LOADED)


def figure(title: str, rows: list[list[str]], limit: str, first: str = "schedules") -> str:
    header = [first, *SCHEDULERS.values()]
    return f"### {title}\n\n{report.markdown_table(header, rows)}\n\n{limit}"


def per_size(payload: dict[str, Any], part: str, render_cell: Any) -> list[list[str]]:
    rows = []
    for entry in payload["sizes"]:
        cells = [render_cell(entry.get(which, {}).get(part)) for which in SCHEDULERS]
        if all(text == "not run" for text in cells):
            continue
        rows.append([f"{entry['size']:,}", *cells])
    return rows


def burst_rows(payload: dict[str, Any]) -> list[list[str]]:
    rows = []
    for entry in payload["sizes"]:
        bursts = sorted(
            {int(b) for which in SCHEDULERS for b in entry.get(which, {}).get("bursts", {})}
        )
        for burst in bursts:
            cells = [
                burst_cell(entry.get(which, {}).get("bursts", {}).get(str(burst)))
                for which in SCHEDULERS
            ]
            rows.append([f"{burst:,} due, {entry['size']:,} stored", *cells])
    return rows


def header_text(payload: dict[str, Any]) -> list[str]:
    facts = payload["machine"]
    parts = [
        f"Run: {report.describe_run(facts, payload['command'], payload.get('timestamp'))}"
        f" {report.describe_load(facts.get('load_before'), facts.get('load_after'))}",
    ]
    if payload.get("harness", 1) < HARNESS:
        parts.append(OLD_HARNESS)
    if payload["settings"].get("broker") == "amqp":
        parts.append(AMQP_NOTE)
    if loaded(facts):
        parts.append(
            "**Measured on a loaded machine** (1-minute load average"
            f" {facts.get('load_before')} before, {facts.get('load_after')} after; per part"
            " below): other processes shared the CPUs, so every figure here is slower and"
            " noisier than on a quiet machine. Compare the three schedulers with each other, not"
            " with a quiet run."
        )
    if payload.get("merged"):
        parts.append(
            "Split run: these figures come from earlier runs: "
            + "; ".join(f"{key}: {source}" for key, source in payload["merged"].items())
            + "."
        )
    if payload.get("wall_s"):
        load = payload.get("load", {})
        parts.append(
            "Wall time per part (1-minute load average at its start): "
            + ", ".join(
                f"{key} {value:,.0f} s"
                + (f" (load {load[key]:g})" if load.get(key) is not None else "")
                for key, value in payload["wall_s"].items()
            )
            + "."
        )
    return parts


def raw_text(raw: dict[str, Any]) -> list[str]:
    if not raw:
        return []
    rows = [
        [
            row["label"],
            f"{row['per_second']['median']:,.0f}",
            f"{row['per_second']['min']:,.0f}",
            f"{row['per_second']['max']:,.0f}",
            str(row["per_second"]["n"]),
        ]
        for row in raw.values()
    ]
    table = report.markdown_table(
        ["raw limit (same run)", "median /s", "min /s", "max /s", "runs"], rows
    )
    return ["### Raw limits of the stack", table, LIMITS["raw"]]


def size_figures(payload: dict[str, Any]) -> list[str]:
    parts = []
    startup = per_size(payload, "startup", lambda s: cell(s, "startup_s"))
    if startup:
        parts += [
            figure(
                "Start-up: build the beat scheduler + first tick, s", startup, LIMITS["startup"]
            ),
            figure(
                "Start-up from process start: interpreter, imports, Django set-up, build, first"
                " tick, s",
                per_size(payload, "startup", lambda s: cell(s, "process_start_s")),
                LIMITS["process_start"],
            ),
            figure(
                "RSS after the first tick, MiB",
                per_size(payload, "startup", lambda s: cell(s, "rss_mib", "{:.0f}")),
                LIMITS["rss"],
            ),
            figure(
                "Idle tick (nothing due), ms",
                per_size(payload, "startup", lambda s: cell(s, "idle_tick_ms", "{:.2f}")),
                LIMITS["idle"] + bare_ticker_sentence(payload),
            ),
            figure(
                "Round trips per idle tick: SQL queries / Redis commands or pipelines",
                per_size(payload, "startup", round_trips),
                LIMITS["round_trips"],
            ),
        ]
    bursts = burst_rows(payload)
    broker = payload["settings"].get("broker", "redis")
    if bursts:
        parts.append(
            figure(
                "Burst: all due at one instant, until every message is in the broker, s (rate)",
                bursts,
                LIMITS["burst"].format(
                    broker=broker_sentence(payload.get("raw_limits") or {}, broker),
                    ours_publish=OURS_PUBLISH[broker],
                ),
                first="burst",
            )
        )
    beat = per_size(payload, "beat", beat_cell)
    if beat:
        parts.append(
            figure(
                "Burst from a real `celery beat`: 1,000 (at most the size) due at T until the"
                " last message is in the broker, s after T (first message)",
                beat,
                LIMITS["beat"],
            )
        )
    soak = per_size(payload, "soak", soak_cell)
    if soak:
        parts.append(
            figure(
                "RSS through an hour of simulated ticks: at start / at end / max, MiB",
                soak,
                LIMITS["soak"] + f" Not measured for the other two: {DCB_SOAK_NOTE}.",
            )
        )
    return parts


def beat_cell(summary: dict[str, Any] | None) -> str:
    if summary is None:
        return "not run"
    first = f" (first {stat(summary, 'first_s')})" if "first_s" in summary else ""
    return burst_cell(summary) + first


def bare_ticker_sentence(payload: dict[str, Any]) -> str:
    """Our idle tick without ``close_old_connections()`` (and its health check), where
    measured."""
    figures = [
        f"{stat(startup, 'ticker_idle_tick_ms', fmt='{:.2f}')} ms at {entry['size']:,}"
        for entry in payload["sizes"]
        if (startup := entry.get("ours", {}).get("startup"))
        and startup.get("finished", True)
        and "ticker_idle_tick_ms" in startup
    ]
    if not figures:
        return ""
    return (
        " Ours without `close_old_connections()` and its health check (`Ticker.tick()` alone): "
        + ", ".join(figures)
        + "."
    )


def soak_cell(soak: dict[str, Any] | None) -> str:
    if soak is None:
        return "not run"
    if not soak.get("finished", True):
        return "not measured" if "note" in soak else (dnf(soak) or "-")
    figures = " / ".join(
        stat(soak, key, fmt="{:.0f}") for key in ("rss_start_mib", "rss_end_mib", "rss_max_mib")
    )
    return f"{figures} ({soak['due']:,} slots in the hour)"


def broker_sentence(raw: dict[str, Any], broker: str) -> str:
    """How long 1,000 messages take at this run's raw rates on Redis ('' elsewhere, or
    without raw limits)."""
    if broker != "redis" or "pipeline" not in raw or "apply_async" not in raw:
        return ""
    pipeline = 1000 / raw["pipeline"]["per_second"]["median"]
    one_by_one = 1000 / raw["apply_async"]["per_second"]["median"]
    return (
        f"Not the broker: at this run's raw rates, 1,000 messages take {pipeline:.3f} s through"
        f" Redis pipelines and {one_by_one:.3f} s through `apply_async` one by one. "
    )


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
        " its statements waited on PostgreSQL (the statement sent, run and its rows received),"
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


def skipped_text(payload: dict[str, Any]) -> str:
    ran = {key for key in ("lateness", "sustained", "profile", "worker") if payload.get(key)}
    ran |= {"raw"} if payload.get("raw_limits") else set()
    figures = {"startup": "startup", "bursts": "burst", "soak": "soak", "beat": "beat"}
    ran |= {figures[key] for s in payload["sizes"] for key in s.get("ours", {}) if key in figures}
    text = ""
    if skipped := payload.get("skipped"):
        text = (
            f"Skipped, the run being past its time limit (`--max-minutes`): {', '.join(skipped)}. "
        )
    missing = [f"`{part}`" for part in PARTS if part not in ran]
    if missing:
        text += "Not measured in this run: " + ", ".join(missing) + "."
    return text.strip()


def render(payload: dict[str, Any]) -> str:
    raw = payload.get("raw_limits") or {}
    parts = header_text(payload)
    if payload["sizes"]:
        parts.append(method_text(payload["settings"], ZONES))
    parts += raw_text(raw)
    parts += size_figures(payload)
    parts += lateness_text(payload.get("lateness"))
    parts += sustained_text(payload.get("sustained"), raw)
    parts += worker_text(payload.get("worker"))
    parts += ["### Targets (issue 16)", judge_text(payload["targets"])]
    if skipped := skipped_text(payload):
        parts.append(skipped)
    parts += budget_text(payload.get("profile"), payload.get("worker"))
    parts += profile_text(payload.get("profile"))
    parts.append(
        f"Raw numbers: `bench/results/{payload.get('benchmark', NAME)}.json`; child process logs:"
        " `var/bench/logs/`."
    )
    return "\n\n".join(parts)


__all__ = ["render", "stat", "verdict"]
