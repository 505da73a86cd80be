"""Time-engine benchmark (``make bench-timing``): what next_after and slot enumeration cost.

Targets (issue 2): median next_after <= 20 µs for ``30 9 * * 1-5``, ``*/15 * * * *`` and
``FREQ=DAILY;BYHOUR=9;BYMINUTE=0`` in Europe/Riga; a rule anchored 10 years ago costs within
1.5x of one anchored yesterday; all 105,120 slots of ``*/5 * * * *`` over a year in <= 1 s.

Method: every next_after sample is one call at its own instant (random, spread over a whole
year, never reused between rounds), timed alone with ``perf_counter_ns`` (timer overhead
subtracted) with the garbage collector off, after a warm-up round; rows are interleaved round
by round. "cold" clears the engine's memo caches (``functools`` caches in
``scheduler_app.timing``) before each call, which is what a scheduler advancing many schedules
sees; the verdicts use the cold numbers. "warm" makes the same call once just before.

    python -m bench.timing [--rounds 10] [--instants 200] [--no-write] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bench import report
from bench.timing_cases import (
    ENUMERATE_EXPECTED,
    ENUMERATE_RULE,
    SEED,
    TARGET_AGE_RATIO,
    YEAR,
    ZONE_NAME,
    Case,
    anchor_age_pairs,
    next_after_cases,
)
from bench.timing_sampling import (
    CACHES,
    OVERHEAD_NS,
    clear_caches,
    measure,
    measure_enumeration,
    spread_instants,
)

NAME = "timing"
HEADING = "Time engine (`make bench-timing`)"

# --- report ------------------------------------------------------------------------------


def verdict(met: bool) -> str:
    return "met" if met else "**missed**"


def us(value: float) -> str:
    return f"{value:,.1f}"


def render(
    facts: dict[str, Any],
    command: str,
    settings: dict[str, Any],
    next_rows: list[dict[str, Any]],
    age_rows: list[dict[str, Any]],
    enum_rows: list[dict[str, Any]],
) -> str:
    next_table = report.markdown_table(
        ["next_after", "median µs", "p10", "p90", "best round", "warm median", "target", "result"],
        [
            [
                row["label"],
                us(row["cold"]["median"]),
                us(row["cold"]["p10"]),
                us(row["cold"]["p90"]),
                us(min(row["cold"]["round_medians"])),
                us(row["warm"]["median"]),
                f"<= {row['target_us']:g} µs" if "target_us" in row else "-",
                verdict(row["met"]) if "met" in row else "-",
            ]
            for row in next_rows
        ],
    )
    age_table = report.markdown_table(
        ["rule", "yesterday: median µs", "10 years ago: median µs", "ratio", "target", "result"],
        [
            [
                row["label"],
                us(row["yesterday"]["cold"]["median"]),
                us(row["ten_years_ago"]["cold"]["median"]),
                f"{row['ratio']:.2f}x",
                f"<= {TARGET_AGE_RATIO:g}x" if "met" in row else "-",
                verdict(row["met"]) if "met" in row else "-",
            ]
            for row in age_rows
        ],
    )
    enum_table = report.markdown_table(
        ["enumerate a year", "slots", "median s", "min s", "max s", "µs/slot", "target", "result"],
        [
            [
                row["label"],
                f"{row['slots']:,}",
                f"{row['seconds']['median']:.3f}",
                f"{row['seconds']['min']:.3f}",
                f"{row['seconds']['max']:.3f}",
                f"{row['us_per_slot']:.2f}",
                f"<= {row['target_s']:g} s",
                verdict(row["met"]),
            ]
            for row in enum_rows
        ],
    )
    samples = settings["rounds"] * settings["instants_per_round"]
    method = (
        f"Zone {ZONE_NAME}. Instants are random (seed {SEED}) over local year {YEAR}; every call"
        f" gets its own instant ({settings['rounds']} rounds x {settings['instants_per_round']}"
        f" = {samples} samples per row, after a warm-up round; rows interleaved round by round)"
        f" and is timed alone (`perf_counter_ns`, timer overhead of {OVERHEAD_NS} ns subtracted,"
        " GC off). Median and p10/p90 are with the engine's per-rule memo caches cleared before"
        " every call (per-zone data, loaded once per zone and year and shared by all schedules"
        ' in it, stays warm; "cold": what a scheduler advancing many schedules sees);'
        ' "warm" makes the same'
        " call once, untimed, just before (the caches hold what it needs: the best case)."
        ' Verdicts use the cold median. "best round" is the lowest of the per-round medians:'
        " on a shared VM the speed changes in phases, and it shows the quiet-phase cost."
        f" Raw numbers: `bench/results/{NAME}.json`."
    )
    age_note = (
        "The anchor (rrule DTSTART, interval grid origin, cron `starts_at`) is set relative to"
        " each instant: the day before it, or 10 years before it. The raw-dateutil row"
        f" ({age_rows[-1]['yesterday']['cold']['n']} samples) is the cost that the engine's"
        " re-anchoring avoids (DESIGN.md section 9)."
    )
    enum_note = (
        f"All slots of `{ENUMERATE_RULE}` in local year {YEAR} ({ENUMERATE_EXPECTED:,} slots,"
        f" DST days included), median of {settings['enumerate_repeats']} runs after a warm-up."
    )
    return "\n\n".join(
        [
            f"Run: {report.describe_run(facts, command)}"
            f" {report.describe_load(facts['load_before'], facts['load_after'])}",
            method,
            "### Next slot",
            next_table,
            "### Cost versus the age of the anchor",
            age_note,
            age_table,
            "### Enumerating a year",
            enum_note,
            enum_table,
        ]
    )


def profile(cases: list[Case], instants: list[datetime], limit: int = 15) -> None:
    """Print where each case's calls spend their time (cProfile, cold caches).

    cProfile charges a fixed cost to every Python-level call, so many tiny functions look
    more expensive than they are; read the shares as a ranking, not as exact fractions.
    """
    for case in cases:
        profiler = cProfile.Profile()
        calls = [case.make(i) for i in instants]
        for subject, instant in calls:
            clear_caches()
            profiler.enable()
            case.call(subject, instant)
            profiler.disable()
        raw: dict[Any, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
        total = sum(own for _, _, own, _, _ in raw.values())
        rows = sorted(raw.items(), key=lambda item: item[1][2], reverse=True)[:limit]
        print(f"\nprofile: {case.label}, {len(calls)} calls, cold caches; per call:")
        print(f"{'own %':>6} {'own µs':>7} {'cum µs':>7} {'calls':>6}  function")
        for (filename, line, name), (_, ncalls, own, cum, _) in rows:
            where = f"{filename.rsplit('/', 1)[-1]}:{line}" if line else "~"
            print(
                f"{own / total:6.1%} {own / len(calls) * 1e6:7.2f} {cum / len(calls) * 1e6:7.2f}"
                f" {ncalls / len(calls):6.2f}  {name} ({where})"
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.timing", description=__doc__)
    parser.add_argument("--rounds", type=int, default=10, help="rounds of distinct instants")
    parser.add_argument("--instants", type=int, default=200, help="instants per round")
    parser.add_argument("--enumerate-repeats", type=int, default=5)
    parser.add_argument("--no-write", action="store_true", help="print only; write no files")
    parser.add_argument("--profile", action="store_true", help="also print cProfile per case")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    command = " ".join(["python -m bench.timing", *argv]) if argv else "make bench-timing"

    load_before = report.load_average()
    rng = random.Random(SEED)
    warmup, *rounds = (
        spread_instants(args.instants, rng) for _ in range(args.rounds + 1)
    )  # distinct instants per round (sampled independently; collisions are negligible)
    settings = {
        "zone": ZONE_NAME,
        "year": YEAR,
        "seed": SEED,
        "rounds": args.rounds,
        "instants_per_round": args.instants,
        "enumerate_repeats": args.enumerate_repeats,
        "timer_overhead_ns": OVERHEAD_NS,
        "caches_cleared_when_cold": [getattr(c, "__qualname__", repr(c)) for c in CACHES],
    }

    cases = next_after_cases()
    age_pairs = anchor_age_pairs()
    age_cases = [case for _, young, old in age_pairs for case in (young, old)]
    measure([*cases, *age_cases], warmup, rounds)
    next_rows = [case.result for case in cases]
    age_rows = []
    for label, young, old in age_pairs:
        row: dict[str, Any] = {
            "label": label,
            "yesterday": young.result,
            "ten_years_ago": old.result,
            "ratio": old.result["cold"]["median"] / young.result["cold"]["median"],
        }
        if not label.startswith("reference"):
            row["target_ratio"] = TARGET_AGE_RATIO
            row["met"] = row["ratio"] <= TARGET_AGE_RATIO
        age_rows.append(row)
    enum_rows = measure_enumeration(args.enumerate_repeats)

    facts = report.machine()
    facts["load_before"], facts["load_after"] = load_before, report.load_average()
    body = render(facts, command, settings, next_rows, age_rows, enum_rows)
    print(f"## {HEADING}\n\n{body}")

    met = [row["met"] for row in next_rows + age_rows + enum_rows if "met" in row]
    if not args.no_write:
        payload = {
            "benchmark": NAME,
            "timestamp": report.now().isoformat(timespec="seconds"),
            "command": command,
            "machine": facts,
            "settings": settings,
            "units": {"next_after": "microseconds per call", "enumerate": "seconds per run"},
            "next_after": next_rows,
            "anchor_age": age_rows,
            "enumerate": enum_rows,
            "targets_met": all(met),
        }
        json_path = report.write_json(NAME, payload)
        md_path = report.write_section(HEADING, body, facts)
        print(f"wrote {md_path.relative_to(report.ROOT)} and {json_path.relative_to(report.ROOT)}")
    if args.profile:
        profile([case for case in cases if case.target_us is not None], rounds[0])
    print(f"targets: {sum(met)}/{len(met)} met")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
