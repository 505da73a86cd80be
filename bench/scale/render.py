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
from bench.scale.cells import beat_cell, burst_cell, cell, round_trips, soak_cell, stat
from bench.scale.env import HARNESS, NAME, SCHEDULERS, ZONES
from bench.scale.judge import judge_text, verdict
from bench.scale.ours_report import (
    budget_text,
    lateness_text,
    profile_text,
    sustained_text,
    worker_text,
)
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
