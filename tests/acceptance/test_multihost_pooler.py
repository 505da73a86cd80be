"""The pieces of ``make test-multihost`` that its verdict trusts, on real namespaces and a
real PgBouncer: hosts reach the services only over the bridge and leave nothing behind, and
what docs/deployment.md ("Behind PgBouncer") says of each setting is what PgBouncer does.

Root, iproute2, PostgreSQL's server binaries and PgBouncer (installed with apt-get when
missing) are needed: locally the tests skip without them, with CI set they fail.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import IN_CI
from torture.infra import Postgres
from torture.multihost.netns import Network
from torture.multihost.pgbouncer import PgBouncer, ensure_installed, version
from torture.multihost.probes import run_probes

pytestmark = pytest.mark.postgres

CONNECT = "import socket, sys; s = socket.create_connection((sys.argv[1], int(sys.argv[2])), 3)"


def _require_root() -> None:
    if os.geteuid() == 0 and shutil.which("ip") and shutil.which("runuser"):
        return
    message = "needs root, iproute2 and runuser (network namespaces, PgBouncer as postgres)"
    if IN_CI:
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def _links(prefix: str) -> str:
    listed = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return "\n".join(line for line in (listed + names).splitlines() if f"{prefix}-" in line)


def _connect_from(
    host_wrap: list[str], address: str, port: int
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*host_wrap, sys.executable, "-c", CONNECT + "; print(s.getsockname()[0])",
         address, str(port)],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip


def test_hosts_reach_the_bridge_not_the_root_loopback_and_teardown_leaves_nothing() -> None:
    _require_root()
    network = Network("mhacc", 2)
    listener, local = socket.socket(), socket.socket()
    try:
        network.setup()
        listener.bind((network.gateway, 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        for host in network.hosts:
            reached = _connect_from(host.wrap([]), network.gateway, port)
            assert reached.returncode == 0, reached.stderr
            assert reached.stdout.strip() == host.address  # it came over its own veth
        # The root namespace's loopback services are not a host's: its 127.0.0.1 is its own.
        local.bind(("127.0.0.1", 0))
        local.listen(8)
        here = _connect_from([], "127.0.0.1", local.getsockname()[1])
        assert here.returncode == 0, here.stderr  # reachable from the root namespace
        isolated = _connect_from(network.hosts[0].wrap([]), "127.0.0.1", local.getsockname()[1])
        assert isolated.returncode != 0
    finally:
        listener.close()
        local.close()
        network.teardown()
    assert _links("mhacc") == ""


@pytest.fixture
def pgbouncer(tmp_path: Path) -> Iterator[PgBouncer]:
    _require_root()
    ensure_installed()
    postgres = Postgres(tmp_path / "pg")
    bouncer = PgBouncer(postgres.port, ("127.0.0.1",))
    try:
        postgres.init()
        bouncer.start()
        yield bouncer
    finally:
        bouncer.destroy()
        postgres.destroy()


def test_behind_pgbouncer_the_documented_settings_hold_and_the_hazards_break(
    pgbouncer: PgBouncer,
) -> None:
    probes = {
        probe.name.split(" (")[0]: probe
        for probe in run_probes(pgbouncer.url("127.0.0.1", "probe"))
    }
    assert probes["no prepared statements"].safe, probes["no prepared statements"].observed
    assert probes["SET TIME ZONE"].safe, probes["SET TIME ZONE"].observed
    for hazard in ("session SET", "session advisory lock", "server-side cursor"):
        assert not probes[hazard].safe, probes[hazard].observed
    if version(ensure_installed()) < (1, 21):  # no max_prepared_statements before 1.21
        assert "already exists" in probes["prepared statements"].observed
