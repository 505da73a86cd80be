"""The harness of the multi-host run: the bridge and its three hosts, PgBouncer in front of the
harness's PostgreSQL, and the beats and workers started inside the hosts (``MultiHost``).

Shared by the command line (``torture.multihost.run``) and the workload and its ledger
(``torture.multihost.ledger``), which import it; it imports neither.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from torture.infra import Redis
from torture.multihost.netns import Host, Network
from torture.multihost.pgbouncer import PgBouncer
from torture.multihost.probes import Probe, run_probes
from torture.processes import Proc
from torture.run import Harness
from torture.workload import Profile

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class HostProc(Proc):
    """A torture process started inside a test host."""

    host: Host | None = None

    def command(self) -> list[str]:
        command = super().command()
        return self.host.wrap(command) if self.host is not None else command


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
