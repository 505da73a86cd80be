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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psycopg

from torture.infra import Redis
from torture.multihost.netns import Host, Network
from torture.multihost.pgbouncer import PgBouncer
from torture.multihost.probes import Probe, run_probes
from torture.processes import Proc
from torture.run import Harness, _interrupted
from torture.scenarios import Event
from torture.workload import PROFILES, Profile

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS = REPO_ROOT / "torture" / "results" / "multihost.json"
# A few hundred schedules every few seconds; work short enough for 2 x 2 worker threads.
PROFILE = replace(
    PROFILES["ci"], name="multihost", schedules=300, scenario_seconds=120.0,
    interval_range=(3, 15), work_range=(0.01, 0.05), workers=2, concurrency=2,
)  # fmt: skip


@dataclass
class HostProc(Proc):
    """A torture process started inside a test host."""

    host: Host | None = None

    def command(self) -> list[str]:
        command = super().command()
        return self.host.wrap(command) if self.host is not None else command


def plan(duration: float) -> list[Event]:
    """PostgreSQL down 2 s at 30 %, a beat killed at 45 % (back 4 s later), PostgreSQL down
    3 s at 70 % of the run."""
    return [
        Event(duration * 0.30, "restart_postgres", 2.0),
        Event(duration * 0.45, "kill_beat", 4.0),
        Event(duration * 0.70, "restart_postgres", 3.0),
    ]


class MultiHost(Harness):
    def __init__(self, directory: Path, seed: int, prefix: str) -> None:
        super().__init__(directory, "multihost", seed)
        self.network = Network(prefix, 3)
        self.redis = Redis(directory / "redis", bind=("127.0.0.1", self.network.gateway))
        self.pgbouncer: PgBouncer | None = None
        self.exports: dict[str, dict[str, Any]] = {}  # the export commands' outcomes

    def boot(self) -> None:
        self.network.setup()  # first: Redis and PgBouncer listen on the bridge's address
        super().boot()
        self.pgbouncer = PgBouncer(self.postgres.port, (self.network.gateway, "127.0.0.1"))
        self.pgbouncer.start()

    def shutdown(self) -> None:
        try:
            super().shutdown()
        finally:
            if self.pgbouncer is not None:
                log = self.directory / "pgbouncer.log"
                self.pgbouncer.destroy(keep_log=log if self.directory.exists() else None)
            self.network.teardown()

    def host_env(self) -> dict[str, str]:
        assert self.pgbouncer is not None
        gateway = self.network.gateway
        return {
            "DJANGO_SETTINGS_MODULE": "torture.multihost.settings",
            "DATABASE_URL": self.pgbouncer.url(gateway),
            "CELERY_BROKER_URL": f"redis://{gateway}:{self.redis.port}/0",
        }

    def processes(self, profile: Profile, run_dir: Path) -> list[Proc]:
        env = self.host_env()
        one, two, three = self.network.hosts
        procs: list[Proc] = [
            HostProc("worker", f"worker{n}", env, run_dir, profile.concurrency, host=host)
            for n, host in ((1, one), (2, two))
        ]
        procs += [
            HostProc("beat", f"beat{n}", env, run_dir, host=host)
            for n, host in ((1, one), (2, two), (3, three))
        ]
        return procs

    def probe(self) -> list[Probe]:
        assert self.pgbouncer is not None
        return run_probes(self.pgbouncer.url("127.0.0.1", "probe"))

    def through_pooler_after_restart(self) -> float:
        """Seconds from PostgreSQL accepting connections again to a query through PgBouncer
        succeeding (PgBouncer retries its server login every ``server_login_retry``)."""
        assert self.pgbouncer is not None
        began = time.monotonic()
        if not wait_through(self.pgbouncer.url("127.0.0.1"), 30.0):
            return -1.0
        return round(time.monotonic() - began, 2)


def wait_through(url: str, timeout: float) -> bool:
    """Whether a query through ``url`` succeeds within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with psycopg.connect(url, connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return True
        except psycopg.Error:
            time.sleep(0.05)
    return False


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
