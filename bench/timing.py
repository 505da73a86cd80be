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
import gc
import importlib
import pkgutil
import pstats
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from datetime import time as wall_time
from itertools import islice
from typing import Any
from zoneinfo import ZoneInfo

from dateutil import rrule as du

import scheduler_app.timing as engine
from bench import report
from scheduler_app.timing import Timing, build_timing, iter_slots, next_after, slots_between

NAME = "timing"
HEADING = "Time engine (`make bench-timing`)"
ZONE_NAME = "Europe/Riga"
ZONE = ZoneInfo(ZONE_NAME)
YEAR = 2026
SEED = 20260329  # the Riga spring-forward day of YEAR

TARGET_NEXT_US = 20.0
TARGET_AGE_RATIO = 1.5
TARGET_ENUMERATE_S = 1.0
ENUMERATE_RULE = "*/5 * * * *"
ENUMERATE_EXPECTED = 105_120
TEN_YEARS = timedelta(days=3652)
YESTERDAY = timedelta(days=1)
DAILY = "FREQ=DAILY;BYHOUR=9;BYMINUTE=0"

Call = Callable[[Any, datetime], object]


@dataclass
class Case:
    """One next_after-style measurement: ``call(subject, instant)`` over many instants."""

    label: str
    make: Callable[[datetime], tuple[Any, datetime]]  # instant -> (subject, argument)
    call: Call = next_after
    target_us: float | None = None
    max_samples: int | None = None  # for slow reference rows
    result: dict[str, Any] = field(default_factory=dict)


# --- the cases ---------------------------------------------------------------------------


def fixed(kind: str, rule: Any, **options: Any) -> Callable[[datetime], tuple[Timing, datetime]]:
    """A single timing built once, asked at each instant."""
    timing = build_timing(kind=kind, rule=rule, timezone=ZONE_NAME, **options)
    return lambda instant: (timing, instant)


def local_day(instant: datetime, back: timedelta, hour: int = 9) -> datetime:
    """Naive Riga wall time ``hour``:00 on the day ``back`` before ``instant``'s local date."""
    day: date = instant.astimezone(ZONE).date() - back
    return datetime.combine(day, wall_time(hour))


def rrule_anchored(back: timedelta) -> Callable[[datetime], tuple[Timing, datetime]]:
    def make(instant: datetime) -> tuple[Timing, datetime]:
        anchor = local_day(instant, back)
        return build_timing(kind="rrule", rule=DAILY, timezone=ZONE_NAME, anchor=anchor), instant

    return make


def cron_starting(back: timedelta) -> Callable[[datetime], tuple[Timing, datetime]]:
    def make(instant: datetime) -> tuple[Timing, datetime]:
        starts_at = local_day(instant, back, hour=0).replace(tzinfo=ZONE)
        timing = build_timing(
            kind="cron", rule="30 9 * * 1-5", timezone=ZONE_NAME, starts_at=starts_at
        )
        return timing, instant

    return make


def interval_anchored(back: timedelta) -> Callable[[datetime], tuple[Timing, datetime]]:
    def make(instant: datetime) -> tuple[Timing, datetime]:
        anchor = (instant - back).replace(microsecond=0)
        return build_timing(kind="interval", rule="15m", timezone=ZONE_NAME, anchor=anchor), instant

    return make


def dateutil_anchored(back: timedelta) -> Callable[[datetime], tuple[du.rrule, datetime]]:
    """Plain dateutil, no re-anchoring: the cost DESIGN.md section 9 warns about."""

    def make(instant: datetime) -> tuple[du.rrule, datetime]:
        rule = du.rrule(
            du.DAILY, dtstart=local_day(instant, back), byhour=9, byminute=0, cache=False
        )
        return rule, instant.astimezone(ZONE).replace(tzinfo=None)

    return make


def dateutil_after(rule: du.rrule, local: datetime) -> object:
    return rule.after(local)


def next_after_cases() -> list[Case]:
    once_at = datetime(YEAR, 7, 1, 12, 0, tzinfo=UTC)
    return [
        Case("cron `30 9 * * 1-5`", fixed("cron", "30 9 * * 1-5"), target_us=TARGET_NEXT_US),
        Case("cron `*/15 * * * *`", fixed("cron", "*/15 * * * *"), target_us=TARGET_NEXT_US),
        Case(
            f"rrule `{DAILY}` (anchor yesterday)",
            rrule_anchored(YESTERDAY),
            target_us=TARGET_NEXT_US,
        ),
        Case("interval 15m (anchor yesterday)", interval_anchored(YESTERDAY)),
        Case("once, aware instant", fixed("once", once_at)),
        Case("once, local wall time", fixed("once", datetime(YEAR, 7, 1, 15, 0))),  # noqa: DTZ001
    ]


def anchor_age_pairs() -> list[tuple[str, Case, Case]]:
    pairs = [
        ("rrule `" + DAILY + "` (anchor)", rrule_anchored, next_after),
        ("cron `30 9 * * 1-5` (starts_at; cron has no anchor)", cron_starting, next_after),
        ("interval 15m (anchor)", interval_anchored, next_after),
        ("reference: raw dateutil `rrule.after()` (DTSTART)", dateutil_anchored, dateutil_after),
    ]
    result = []
    for label, factory, call in pairs:
        reference = factory is dateutil_anchored
        limit = 100 if reference else None
        young = Case(label + " yesterday", factory(YESTERDAY), call, max_samples=limit)
        old = Case(label + " 10 years ago", factory(TEN_YEARS), call, max_samples=limit)
        result.append((label, young, old))
    return result


# --- sampling ----------------------------------------------------------------------------


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
