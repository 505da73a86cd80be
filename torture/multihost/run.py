"""``python -m torture.multihost``: several hosts, PgBouncer, faults, then the ledger checked.

The run: a bridge and three hosts (network namespaces); the harness's private PostgreSQL and
Redis in the root namespace, PgBouncer (transaction mode) in front of PostgreSQL, both
listening on the bridge; hosts 1 and 2 each run a beat and a Celery worker (threads,
concurrency 2), host 3 a third beat; every database connection of theirs goes through
PgBouncer. First the pooler probes (``probes``), then the workload of the torture harness
for ``--seconds``, with PostgreSQL restarted twice and a beat killed (-9) in between. Then
the beats stop, the harness materializes and drains what is left, and the torture checker
reads the ledger: every slot one occurrence, none lost, no duplicated effect, all finished.

Everything it made (namespaces, links, servers, processes) is removed on the way out, also
after a failure, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import time
from dataclasses import replace
from pathlib import Path

from torture.multihost.hosts import REPO_ROOT, MultiHost
from torture.run import _interrupted
from torture.workload import PROFILES

RESULTS = REPO_ROOT / "torture" / "results" / "multihost.json"
# A few hundred schedules every few seconds; work short enough for 2 x 2 worker threads.
PROFILE = replace(
    PROFILES["ci"], name="multihost", schedules=300, scenario_seconds=120.0,
    interval_range=(3, 15), work_range=(0.01, 0.05), workers=2, concurrency=2,
)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torture.multihost", description=__doc__)
    parser.add_argument("--seconds", type=float, default=PROFILE.scenario_seconds)
    parser.add_argument("--schedules", type=int, default=PROFILE.schedules)
    parser.add_argument("--seed", type=int, default=None, help="default: random, printed")
    parser.add_argument("--dir", default=str(REPO_ROOT / "var" / "multihost"))
    parser.add_argument("--prefix", default="ddsmh", help="names of namespaces and links")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**6)
    profile = replace(PROFILE, scenario_seconds=args.seconds, schedules=args.schedules)
    print(
        f"multihost: {profile.schedules} schedules, {profile.scenario_seconds:.0f} s, seed {seed}",
        flush=True,
    )
    harness = MultiHost(Path(args.dir), seed, args.prefix)
    signal.signal(signal.SIGTERM, _interrupted)  # a timeout's SIGTERM cleans up too
    started = time.monotonic()
    try:
        harness.boot()
        # Django is set up by boot() (the database's port is known only then): the ledger
        # side, which imports the models, can only be imported now.
        from torture.multihost.ledger import run_workload

        probes = harness.probe()
        for probe in probes:
            print(f"multihost: probe {probe.line()}", flush=True)
        figures = run_workload(harness, profile)
    finally:
        harness.shutdown()
    figures["probes"] = [probe.as_json() for probe in probes]
    figures["total_s"] = round(time.monotonic() - started, 1)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"seed": seed, **figures}, indent=1, default=str) + "\n")
    print(f"multihost: {figures['line']}", flush=True)
    for problem in figures["problems"][:10]:
        print(f"    {problem}", flush=True)
    unsafe = [p.name for p in probes if p.required_safe and not p.safe]
    if unsafe:
        print(f"multihost: recommended settings proved unsafe: {', '.join(unsafe)}", flush=True)
    print(
        f"multihost: figures in {RESULTS.relative_to(REPO_ROOT)}, logs in {args.dir} "
        f"({figures['total_s']:.0f} s)",
        flush=True,
    )
    return 0 if figures["ok"] and not unsafe else 1
