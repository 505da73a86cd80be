"""What the costliest rules a user can type cost (``make bench-timing``; security review,
finding 2): 1,000 RDATEs beside a sub-daily RRULE, parsed (formerly 13 s to minutes: the gap
check walked the rule over a whole day around every RDATE), and the "does it ever fire" search
for a solar event that never falls on a local date (formerly about 90 s: a walk to the year
9999). Each row is timed with the engine's caches cleared, as a fresh process (the beat after
a restart) pays it.

    python -m bench.timing_limits [--repeats 7] [--no-write]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from bench import report
from bench.timing_sampling import clear_caches
from scheduler_app.errors import InvalidRule
from scheduler_app.timing import build_timing, first_slot
from scheduler_app.timing.rrules import parse_rrule

NAME = "timing_limits"
HEADING = "Costliest rules a user can type (`make bench-timing`)"
TARGET_PARSE_S = 0.25
TARGET_SOLAR_S = 0.5
NOW = datetime(2026, 12, 2, tzinfo=UTC)


def rdates_rule(rrule: str, second: int) -> str:
    """The review's rule: 1,000 daily RDATEs (16 KB) beside ``rrule``."""
    base = datetime(2027, 1, 1, 0, 0, second)  # noqa: DTZ001 - a wall time
    rdates = ",".join(f"{base + timedelta(days=i):%Y%m%dT%H%M%S}" for i in range(1000))
    return f"DTSTART:20261201T000000\nRRULE:{rrule}\nRDATE:{rdates}"


def parse(rrule: str, second: int) -> Callable[[], str]:
    text = rdates_rule(rrule, second)

    def run() -> str:
        return f"min_gap {parse_rrule(text, None, ZoneInfo('Europe/Riga')).min_gap} s"

    return run


def search(rule: str) -> Callable[[], str]:
    timing = build_timing(kind="solar", rule=rule, timezone="UTC")

    def run() -> str:
        try:
            return f"first slot {first_slot(timing, NOW)}"
        except InvalidRule as error:
            return f"refused ({error.code})"

    return run


CASES: list[tuple[str, Callable[[], str], float]] = [
    (
        "parse: `FREQ=MINUTELY;BYSECOND=0` + 1,000 RDATEs",
        parse("FREQ=MINUTELY;BYSECOND=0", 30),
        TARGET_PARSE_S,
    ),
    ("parse: `FREQ=MINUTELY` + 1,000 RDATEs", parse("FREQ=MINUTELY", 7), TARGET_PARSE_S),
    (
        "parse: `FREQ=SECONDLY;INTERVAL=10` + 1,000 RDATEs",
        parse("FREQ=SECONDLY;INTERVAL=10", 7),
        TARGET_PARSE_S,
    ),
    ("first_slot: `sunset 89.99 -179.9`, UTC", search("sunset 89.99 -179.9"), TARGET_SOLAR_S),
    ("first_slot: `dusk 90 -179.9`, UTC", search("dusk 90 -179.9"), TARGET_SOLAR_S),
    ("first_slot: `sunrise 89.99 -179.9`, UTC", search("sunrise 89.99 -179.9"), TARGET_SOLAR_S),
]


def measure(repeats: int) -> list[dict[str, Any]]:
    rows = []
    for label, run, target in CASES:
        seconds = []
        answer = ""
        for _ in range(repeats):
            clear_caches()
            begin = time.perf_counter()
            answer = run()
            seconds.append(time.perf_counter() - begin)
        stats = report.summarize(seconds, digits=4)
        rows.append(
            {
                "label": label,
                "answer": answer,
                "seconds": stats,
                "target_s": target,
                "met": stats["median"] <= target,
            }
        )
    return rows


def render(facts: dict[str, Any], command: str, rows: list[dict[str, Any]], repeats: int) -> str:
    table = report.markdown_table(
        ["input", "answer", "median ms", "max ms", "target", "result"],
        [
            [
                row["label"],
                row["answer"],
                f"{row['seconds']['median'] * 1000:,.1f}",
                f"{row['seconds']['max'] * 1000:,.1f}",
                f"<= {row['target_s'] * 1000:g} ms",
                "met" if row["met"] else "**missed**",
            ]
            for row in rows
        ],
    )
    return "\n\n".join(
        [
            f"Run: {report.describe_run(facts, command)}"
            f" {report.describe_load(facts['load_before'], facts['load_after'])}",
            f"Median of {repeats} runs, each with the engine's caches cleared (a fresh process)."
            " Before the bounds (security review, finding 2) the parses took 13 s to 168 s"
            " and the never-firing solar search about 90 s."
            f" Raw numbers: `bench/results/{NAME}.json`.",
            table,
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.timing_limits", description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-write", action="store_true", help="print only; write no files")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    command = " ".join(["python -m bench.timing_limits", *argv])
    load_before = report.load_average()
    rows = measure(args.repeats)
    facts = report.machine()
    facts["load_before"], facts["load_after"] = load_before, report.load_average()
    body = render(facts, command, rows, args.repeats)
    print(f"## {HEADING}\n\n{body}")
    if not args.no_write:
        payload = {
            "benchmark": NAME,
            "timestamp": report.now().isoformat(timespec="seconds"),
            "command": command,
            "machine": facts,
            "units": {"seconds": "seconds per call, caches cleared"},
            "rows": rows,
            "targets_met": all(row["met"] for row in rows),
        }
        report.write_json(NAME, payload)
        report.write_section(HEADING, body, facts)
    met = sum(row["met"] for row in rows)
    print(f"targets: {met}/{len(rows)} met")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
