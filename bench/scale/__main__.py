"""``python -m bench.scale``: the command line of the scale benchmark (see ``bench.scale``)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bench import report
from bench.scale import __doc__ as DOC
from bench.scale.budget import budget_burst
from bench.scale.env import (
    AMQP_URL,
    HARNESS,
    KINDS,
    SCHEDULERS,
    ZONES,
    clear_broker,
    report_names,
    use_broker,
)

PARTS = ("raw", "startup", "burst", "soak", "profile", "beat", "lateness", "sustained", "worker")
AMQP_PARTS = ("raw", "burst", "beat", "sustained", "worker")
"""The default parts on RabbitMQ (issue 16: the burst, sustained and worker figures)."""
SIZE_PARTS = ("startup", "burst", "soak", "profile", "beat")
CHILDREN = ("ours", "redbeat", "dcb", "soak")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale",
        description=DOC,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("--sizes", default="1000,10000", help="comma-separated schedule counts")
    add(
        "--only",
        help=f"parts to run (default all: {','.join(PARTS)}; amqp: {','.join(AMQP_PARTS)})",
    )
    add("--broker", default="redis", choices=["redis", "amqp"], help="where messages go")
    add("--amqp-url", default=AMQP_URL, help="RabbitMQ for --broker amqp")
    add("--schedulers", default=",".join(SCHEDULERS), help="which of ours,redbeat,dcb to run")
    add("--repeats", type=int, default=3, help="samples per figure (ours; start-up: all)")
    add("--dcb-repeats", type=int, default=1, help="django-celery-beat bursts per row")
    add("--dcb-budget", type=float, default=60.0, help="s per django-celery-beat burst/child")
    add("--rb-repeats", type=int, default=3, help="celery-redbeat bursts per row")
    add("--rb-budget", type=float, default=120.0, help="s per celery-redbeat burst/child")
    add("--beat-repeats", type=int, default=1, help="real-beat bursts per scheduler")
    add("--budget", type=float, default=120.0, help="s per burst and soak of ours")
    add("--raw-repeats", type=int, default=3)
    add("--idle-ticks", type=int, default=20)
    add("--soak-due", type=int, default=720, help="schedules due during the simulated hour")
    add("--soak-repeats", type=int, default=1, help="simulated hours per size")
    add("--soak-hour", type=float, default=3600.0, help=argparse.SUPPRESS)
    add("--lateness-rate", type=int, default=60_000, help="slots per minute, steady load")
    add("--lateness-seconds", type=float, default=60.0, help="measured window per run")
    add("--lateness-repeats", type=int, default=1)
    add("--backlog", type=int, default=10_000, help="due schedules, sustained")
    add("--sustained-seconds", type=float, default=180.0, help="cap per sustained run")
    add("--sustained-repeats", type=int, default=1)
    add("--worker-tasks", type=int, default=1000, help="tasks per worker-overhead run")
    add("--worker-repeats", type=int, default=2)
    add("--max-minutes", type=float, default=20.0, help="start no part after this (0: no limit)")
    add("--no-write", action="store_true", help="print only; write no files")
    add("--no-profile", action="store_true")
    add("--merge", action="store_true", help="keep the parts not run now from scale.json")
    add("--render-only", action="store_true", help="re-render the docs from scale.json")
    add("--child", choices=CHILDREN, help=argparse.SUPPRESS)
    add("--ticks", type=int, default=20, help=argparse.SUPPRESS)
    add("--at", help=argparse.SUPPRESS)
    add("--hour", type=float, default=3600.0, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def run_child(args: argparse.Namespace) -> dict[str, Any]:
    """Inside a child process: one sample, printed as the last JSON line of stdout."""
    if args.child in ("ours", "redbeat", "dcb"):
        from bench.scale.drivers import startup_child

        return startup_child(args.child, args.ticks)
    from bench.scale.drivers import ours

    return ours.soak_child(datetime.fromisoformat(args.at), args.hour)


def choose(args: argparse.Namespace) -> tuple[list[int], list[str], list[str]]:
    """Sizes, parts and schedulers to run, checked."""
    sizes = args_sizes(args)
    default = AMQP_PARTS if args.broker == "amqp" else PARTS
    only = [part.strip() for part in (args.only or ",".join(default)).split(",") if part.strip()]
    if unknown := set(only) - set(PARTS):
        raise SystemExit(f"--only: unknown part(s) {', '.join(sorted(unknown))}; know {PARTS}")
    schedulers = [name.strip() for name in args.schedulers.split(",") if name.strip()]
    if unknown := set(schedulers) - set(SCHEDULERS):
        raise SystemExit(
            f"--schedulers: unknown {', '.join(sorted(unknown))}; know ours,redbeat,dcb"
        )
    if "sustained" in only and "raw" not in only:
        only.append("raw")  # the sustained figure is compared with the raw rate of the same run
    if args.no_profile and "profile" in only:
        only.remove("profile")
    parts = [part for part in PARTS if part in only]
    if not any(part in parts for part in SIZE_PARTS):
        sizes = []
    return sizes, parts, [name for name in SCHEDULERS if name in schedulers]


def measure_size(
    size: int, parts: list[str], schedulers: list[str], args: argparse.Namespace
) -> dict[str, Any]:
    from bench.scale import figures
    from bench.scale.drivers import driver, ours, redbeat
    from bench.scale.env import due_instant
    from bench.scale.workload import create_schedules, set_idle

    at = due_instant()
    print(f"size {size:,}: creating schedules (T = {at.isoformat()}) ...", flush=True)
    others = bool({"startup", "burst"} & set(parts))  # the parts the other two run in
    created = create_schedules(size, at, dcb=others and "dcb" in schedulers)
    if others and "redbeat" in schedulers:
        created["redbeat_s"] = redbeat.load(size, at)["seconds"]
    print(f"  created in {created['seconds']:.1f} s", flush=True)
    set_idle(at)
    entry: dict[str, Any] = {"size": size, "create": created}
    entry |= {which: {} for which in schedulers}
    budgets = {"ours": args.budget, "redbeat": args.rb_budget, "dcb": args.dcb_budget}
    repeats = {"ours": args.repeats, "redbeat": args.rb_repeats, "dcb": args.dcb_repeats}
    if "startup" in parts:
        for which in schedulers:
            print(f"  {SCHEDULERS[which]}: start-up and idle ticks ...", flush=True)
            if which == "redbeat":
                redbeat.arrange(0, at)
            budget = max(budgets[which], size / 1000) if which == "ours" else budgets[which]
            entry[which]["startup"] = figures.startup_samples(
                which, args.repeats, args.idle_ticks, budget
            )
    if "burst" in parts:
        for which in schedulers:
            entry[which]["bursts"] = {}
        for burst in figures.bursts_for(size):
            for which in schedulers:  # interleaved per burst size
                print(f"  {SCHEDULERS[which]}: burst {burst:,} ...", flush=True)
                entry[which]["bursts"][str(burst)] = figures.burst_samples(
                    driver(which).burst, burst, at, repeats[which], budgets[which]
                )
    if "soak" in parts and "ours" in schedulers:
        print("  ours: an hour of simulated ticks ...", flush=True)
        entry["ours"]["soak"] = figures.soak_samples(
            size, at, args.soak_repeats, args.soak_due, args.soak_hour, args.budget
        )
        for which in schedulers[1:]:
            entry[which]["soak"] = {"finished": False, "note": "real clock only"}
    if "profile" in parts and "ours" in schedulers and size == max(args_sizes(args)):
        burst = min(size, 1000)
        print(f"  profiling our burst of {burst:,} ...", flush=True)
        entry["profile"] = {"size": size, **ours.profile_burst(burst, at)}
        print(f"  timing our burst of {burst:,} by phase (the budget per slot) ...", flush=True)
        entry["profile"]["budget"] = budget_burst(burst, at)
    if "beat" in parts and size == max(args_sizes(args)):  # last: it makes schedules anew
        from bench.scale.beatburst import beat_samples

        for which, summary in beat_samples(size, schedulers, args.beat_repeats, budgets).items():
            entry[which]["beat"] = summary
    set_idle(at)
    return entry


def args_sizes(args: argparse.Namespace) -> list[int]:
    return [int(value.replace("_", "")) for value in args.sizes.split(",") if value]


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if args.child:
        print(json.dumps(run_child(args)))
        return 0
    if args.render_only:
        return render_only(args.broker)
    command = " ".join(["python -m bench.scale", *argv]) if argv else "make bench"
    sizes, parts, schedulers = choose(args)

    from bench.scale.env import setup_django

    use_broker(args.broker, args.amqp_url)
    setup_django(migrate=True)
    from django.conf import settings as django_settings

    load_before = report.load_average()
    timings: dict[str, float] = {}
    loads: dict[str, float | None] = {}

    started = time.perf_counter()
    skipped: list[str] = []

    def over_time(part: str) -> bool:
        """Past ``--max-minutes``: the part is skipped (and said so in the report)."""
        limit = args.max_minutes * 60
        if limit and time.perf_counter() - started >= limit:
            print(f"{part}: skipped (past --max-minutes {args.max_minutes:g})", flush=True)
            skipped.append(part)
            return True
        return False

    def timed(part: str, run: Any, *run_args: Any) -> Any:
        loads[part] = report.load_average()
        begin = time.perf_counter()
        value = run(*run_args)
        timings[part] = time.perf_counter() - begin
        return value

    raw: dict[str, Any] = {}
    if "raw" in parts:
        from bench.scale.raw import raw_limits

        print("raw limits ...", flush=True)
        raw = timed("raw", raw_limits, args.raw_repeats, 3000, 50_000)
        for row in raw.values():
            print(f"  {row['label']}: {row['per_second']['median']:,.0f}/s", flush=True)
    results = []
    profile = None
    for size in sizes:
        if over_time(f"size {size:,}"):
            continue
        entry = timed(f"size {size:,}", measure_size, size, parts, schedulers, args)
        profile = entry.pop("profile", profile)
        entry["wall_s"] = round(timings[f"size {size:,}"], 1)
        results.append(entry)
    once = run_once(parts, args)
    for part, (message, run, run_args) in once.items():
        if over_time(part):
            once[part] = None
            continue
        print(message, flush=True)
        once[part] = timed(part, run, *run_args)
    clear_broker(keep_redbeat=False)

    facts = report.machine()
    facts["load_before"], facts["load_after"] = load_before, report.load_average()
    payload: dict[str, Any] = {
        "benchmark": report_names(args.broker)[0],
        "harness": HARNESS,
        "timestamp": report.now().isoformat(timespec="seconds"),
        "command": command,
        "machine": facts,
        "settings": settings_of(args, sizes, parts, schedulers, django_settings),
        "units": {"seconds": "s", "rss": "MiB", "idle_tick": "ms", "raw": "per second"},
        "wall_s": {key: round(value, 1) for key, value in timings.items()},
        "load": loads,
        "raw_limits": raw,
        "sizes": results,
        "lateness": once.get("lateness"),
        "sustained": once.get("sustained"),
        "worker": once.get("worker"),
        "skipped": skipped,
    }
    if profile:
        payload["profile"] = profile | {"top_own_time": profile["top_own_time"].splitlines()}
    if args.merge:
        merge_previous(payload)
    return publish(payload, write=not args.no_write)


def run_once(parts: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """The parts measured once per run, on their own schedules: part -> (message, function,
    arguments), in the order they run."""
    from bench.scale.realtime import lateness_samples, sustained_samples
    from bench.scale.worker import worker_samples

    plan = {
        "lateness": (
            f"lateness: {args.lateness_rate:,} slots per minute ...",
            lateness_samples,
            (args.lateness_repeats, args.lateness_rate, args.lateness_seconds),
        ),
        "sustained": (
            f"sustained: backlog of {args.backlog:,} ...",
            sustained_samples,
            (args.sustained_repeats, args.backlog, args.sustained_seconds),
        ),
        "worker": (
            f"worker: {args.worker_tasks:,} tasks ...",
            worker_samples,
            (args.worker_repeats, args.worker_tasks, 300.0),
        ),
    }
    return {part: step for part, step in plan.items() if part in parts}


def settings_of(
    args: argparse.Namespace,
    sizes: list[int],
    parts: list[str],
    schedulers: list[str],
    django_settings: Any,
) -> dict[str, Any]:
    from bench.scale.env import redis_url
    from scheduler_app.conf import get_settings

    keep = (
        "repeats", "dcb_repeats", "dcb_budget", "rb_repeats", "rb_budget", "budget", "beat_repeats",
        "raw_repeats", "idle_ticks", "soak_due", "soak_repeats", "lateness_rate",
        "lateness_seconds", "lateness_repeats", "backlog", "sustained_seconds",
        "sustained_repeats", "worker_tasks", "worker_repeats",
    )  # fmt: skip
    return {
        "sizes": sizes,
        "parts": parts,
        "schedulers": schedulers,
        **{key: getattr(args, key) for key in keep},
        "soak_hour_s": args.soak_hour,
        "zones": ZONES,
        "kinds": KINDS,
        "database": django_settings.DATABASES["default"]["NAME"],
        "redis_db": redis_url().rsplit("/", 1)[-1],
        "broker": args.broker,
        "batch_size": get_settings().BATCH_SIZE,
    }


def publish(payload: dict[str, Any], write: bool, results: bool = True) -> int:
    """Judge, render, print; unless ``write`` is false write the docs section and (with
    ``results``) the JSON."""
    from bench.scale.judge import judge
    from bench.scale.render import render

    name, heading = report_names(payload["settings"].get("broker", "redis"))
    payload["targets"] = judge(payload)
    body = render(payload)
    print(f"## {heading}\n\n{body}")
    if write:
        if results:
            json_path = report.write_json(name, payload)
            print(f"wrote {json_path.relative_to(report.ROOT)}")
        md_path = report.write_section(heading, body, payload["machine"])
        print(f"wrote {md_path.relative_to(report.ROOT)}")
    met = [v["met"] for v in payload["targets"] if v["met"] is not None]
    print(f"targets: {sum(met)}/{len(met)} met")
    return 0


def render_only(broker: str) -> int:
    path = report.RESULTS_DIR / f"{report_names(broker)[0]}.json"
    if not path.exists():
        raise SystemExit(f"{path} does not exist: run `make bench` first")
    payload = json.loads(path.read_text())
    return publish(payload, write=True, results=False)


def merge_previous(payload: dict[str, Any]) -> None:
    """Fill what this run did not measure from the previous ``scale.json`` (a split run):
    per part, and per size, scheduler and figure; ``merged`` records where each came from."""
    path = report.RESULTS_DIR / f"{payload['benchmark']}.json"
    if not path.exists():
        return
    merge(payload, json.loads(path.read_text()))


def merge(payload: dict[str, Any], old: dict[str, Any]) -> None:
    source = f"`{old.get('command')}` ({old.get('timestamp')})"
    if old.get("harness", 1) < HARNESS:
        source += ", the first harness: rerun it"
    merged: dict[str, str] = dict(old.get("merged", {}))
    for key in ("raw_limits", "lateness", "sustained", "worker", "profile"):
        if not payload.get(key) and old.get(key):
            payload[key] = old[key]
            merged[key] = old.get("merged", {}).get(key, source)
    by_size = {entry["size"]: entry for entry in payload["sizes"]}
    for entry in old.get("sizes", []):
        mine = by_size.get(entry["size"])
        if mine is None:
            payload["sizes"].append(entry)
            merged[f"{entry['size']:,} schedules"] = source
            continue
        for which in SCHEDULERS:
            for figure, value in entry.get(which, {}).items():
                if figure not in mine.setdefault(which, {}):
                    mine[which][figure] = value
                    merged[f"{figure} at {entry['size']:,} ({which})"] = source
    payload["sizes"].sort(key=lambda entry: entry["size"])
    payload["settings"]["sizes"] = [entry["size"] for entry in payload["sizes"]]
    payload["merged"] = merged


if __name__ == "__main__":
    raise SystemExit(main())
