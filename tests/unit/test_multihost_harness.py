"""The multi-host harness's pure parts (``make test-multihost`` runs the real thing, as root).

What is pinned here is what the run's verdict depends on without being checked by it: the
hosts really are separate namespaces reaching the services over the bridge, PgBouncer really
pools by transaction, the faults the docs promise are the ones planned, and the settings the
docs recommend behind PgBouncer are the ones the hosts' processes run with.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from torture.multihost import settings as host_settings
from torture.multihost.hosts import HostProc
from torture.multihost.ledger import export_outcome, plan
from torture.multihost.netns import SUBNET, Host, NetnsError, Network
from torture.multihost.pgbouncer import PROBE_POOL_SIZE, render_config
from torture.multihost.probes import PROBES, Probe
from torture.multihost.run import PROFILE


def test_each_host_is_a_namespace_with_its_own_address_on_the_bridge() -> None:
    network = Network("mhtest", 3)
    hosts = network.planned_hosts()
    assert [h.namespace for h in hosts] == ["mhtest-h1", "mhtest-h2", "mhtest-h3"]
    assert len({h.address for h in hosts} | {network.gateway}) == 4
    assert all(h.address.startswith(f"{SUBNET}.") for h in hosts)
    commands = [" ".join(c) for c in network.setup_commands()]
    assert commands[0] == "ip link add mhtest-br type bridge"
    for host in hosts:
        assert f"ip netns add {host.namespace}" in commands
        # The host's end of the veth pair is moved into its namespace, the other on the bridge.
        assert any(c.endswith(f"peer name eth0 netns {host.namespace}") for c in commands)
        assert f"ip link set {host.veth} master mhtest-br up" in commands
        assert f"ip -n {host.namespace} link set lo up" in commands


def test_a_prefix_that_would_overflow_an_interface_name_is_refused_with_its_limit() -> None:
    with pytest.raises(NetnsError, match="longer than 9 characters"):
        Network("much-too-long", 2)


def test_a_host_process_is_the_torture_command_run_inside_the_namespace() -> None:
    host = Host("mhtest-h2", "mhtest-h2", f"{SUBNET}.12")
    proc = HostProc("worker", "worker2", {}, Path("/tmp"), 2, host=host)
    command = proc.command()
    assert command[:4] == ["ip", "netns", "exec", "mhtest-h2"]
    assert "worker" in command and "--concurrency=2" in command


def test_pgbouncer_pools_by_transaction_and_retries_its_login_every_second() -> None:
    text = render_config(
        listen=(f"{SUBNET}.1", "127.0.0.1"), port=6001, pg_port=5001, database="torture",
        directory=Path("/tmp/x"),
    )  # fmt: skip
    lines = set(text.splitlines())
    assert "pool_mode = transaction" in lines
    assert f"listen_addr = {SUBNET}.1,127.0.0.1" in lines
    assert "server_login_retry = 1" in lines
    assert "torture = host=127.0.0.1 port=5001 dbname=torture user=postgres" in lines
    probe = (
        f"probe = host=127.0.0.1 port=5001 dbname=torture user=postgres pool_size={PROBE_POOL_SIZE}"
    )
    assert probe in lines


def test_the_run_restarts_postgres_twice_and_kills_a_beat_inside_its_length() -> None:
    events = plan(120.0)
    assert [e.fault for e in events] == ["restart_postgres", "kill_beat", "restart_postgres"]
    assert all(0 < e.at < 120.0 and e.pause > 0 for e in events)
    assert events == sorted(events, key=lambda e: e.at)


def test_the_default_run_is_a_few_hundred_schedules_every_few_seconds_on_two_small_workers() -> (
    None
):
    assert PROFILE.schedules >= 200 and PROFILE.interval_range[1] <= 15
    assert (PROFILE.workers, PROFILE.concurrency) == (2, 2)


def test_hosts_run_with_the_settings_the_docs_recommend_behind_pgbouncer() -> None:
    database = host_settings.DATABASES["default"]
    assert database["DISABLE_SERVER_SIDE_CURSORS"] is True
    assert database["OPTIONS"]["prepare_threshold"] is None


def test_a_probe_line_says_unsafe_first_so_it_stands_out_in_the_run_output() -> None:
    unsafe = Probe("x", "no", safe=False, observed="lost", required_safe=False)
    assert unsafe.line() == "UNSAFE x: lost (project: no)"
    assert {probe.__name__ for probe in PROBES} >= {"unprepared_statements", "hold_cursor"}


def _python(code: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_an_export_outcome_is_its_row_count_or_the_last_line_of_its_error() -> None:
    done = export_outcome(_python("print('{\"exported\": 7}')"))
    assert done == {"returncode": 0, "exported": 7}
    failed = export_outcome(_python("import sys; sys.exit('Traceback\\nInvalidCursorName: gone')"))
    assert failed == {"returncode": 1, "error": "InvalidCursorName: gone"}
