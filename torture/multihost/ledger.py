"""The workload of the multi-host run and what the ledger says of it (Django set up).

The schedules, the checker and the figures are the torture harness's (``torture.workload``,
``torture.checker``, ``torture.ledger_figures``); what this adds is the fault plan of the
multi-host run, the time PgBouncer takes to serve queries again after PostgreSQL restarts, and
per-host figures read from the logs and the sink table.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from django.db import connection

from torture.checker import check
from torture.ledger_figures import _dispatch_delays, _lateness, _outcomes, percentiles
from torture.multihost.hosts import REPO_ROOT, MultiHost
from torture.processes import Proc
from torture.run import _wait
from torture.scenarios import Event
from torture.workload import Profile, create, generate

ERRORS = re.compile(r"OperationalError|InterfaceError|server closed the connection")


def plan(duration: float) -> list[Event]:
    """PostgreSQL down 2 s at 30 %, a beat killed at 45 % (back 4 s later), PostgreSQL down
    3 s at 70 % of the run."""
    return [
        Event(duration * 0.30, "restart_postgres", 2.0),
        Event(duration * 0.45, "kill_beat", 4.0),
        Event(duration * 0.70, "restart_postgres", 3.0),
    ]


def executions_by_worker(procs: list[Proc]) -> dict[str, int]:
    """Task executions per worker (thread pool: the worker's own pid writes the row)."""
    pids = {proc.process.pid: proc.name for proc in procs if proc.kind == "worker" and proc.process}
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid, count(*) FROM torture_execution GROUP BY pid")
        rows = cursor.fetchall()
    counts: Counter[str] = Counter()
    for pid, count in rows:
        counts[pids.get(pid, "a restarted worker")] += count
    return dict(counts)


def from_logs(procs: list[Proc]) -> dict[str, dict[str, int]]:
    """Per process, how often its log says a database error interrupted it (and it went on):
    beat ticks that failed and were retried, worker receipts it could not record, and every
    connection error logged (tracebacks included)."""
    texts = {proc.name: proc.tail(10**8) for proc in procs}
    return {
        "beat_ticks_failed": {
            p.name: texts[p.name].count("WARNING scheduler_app.beat tick failed")
            for p in procs
            if p.kind == "beat"
        },
        "worker_receipts_not_recorded": {
            p.name: texts[p.name].count("could not record the receipt")
            for p in procs
            if p.kind == "worker"
        },
        "connection_errors_logged": {n: len(ERRORS.findall(t)) for n, t in texts.items()},
    }


def lateness_by_window(start: datetime, seconds: int = 10) -> list[dict[str, float]]:
    """Dispatch lateness percentiles of the slots due in each ``seconds`` window of the run:
    where the faults (their offsets are in ``fault_at_s``) show up."""
    windows: dict[int, list[float]] = {}
    for slot, delay in _dispatch_delays():
        windows.setdefault(int((slot - start).total_seconds() // seconds), []).append(delay)
    return [
        {"from_s": index * seconds, **percentiles(values)}
        for index, values in sorted(windows.items())
    ]


def start_export(harness: MultiHost, run_dir: Path, *, server_side: bool) -> subprocess.Popen[str]:
    """``manage.py export_occurrences`` (``QuerySet.iterator()``, 1,000 rows a fetch) on the
    last host, through PgBouncer, while the workload runs; with server-side cursors back on
    when ``server_side``."""
    name = "export-server-side-cursors" if server_side else "export"
    env = {**os.environ, **harness.host_env()}
    env["MULTIHOST_SERVER_SIDE_CURSORS"] = "1" if server_side else "0"
    command = [sys.executable, "manage.py", "export_occurrences", "--no-progress", "--json"]
    return subprocess.Popen(
        harness.network.hosts[-1].wrap([*command, "--output", str(run_dir / f"{name}.jsonl")]),
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def export_outcome(process: subprocess.Popen[str]) -> dict[str, Any]:
    """Exit code, rows exported, and the error's last line when it failed."""
    out, err = process.communicate(timeout=300)
    outcome: dict[str, Any] = {"returncode": process.returncode}
    if process.returncode == 0:
        outcome["exported"] = json.loads(out.strip().splitlines()[-1])["exported"]
    else:
        outcome["error"] = (err.strip().splitlines() or ["(no output)"])[-1][:300]
    return outcome


def run_faults(
    harness: MultiHost, profile: Profile, rng: random.Random, start: datetime
) -> tuple[Counter[str], list[float], list[tuple[float, str]]]:
    """Keep the hosts' processes up for the run's length while the faults are injected."""
    faults: Counter[str] = Counter()
    events = plan(profile.scenario_seconds)
    restarts: list[tuple[float, Proc]] = []
    recovered: list[float] = []
    injected: list[tuple[float, str]] = []  # seconds after ``start``, fault
    exports: list[subprocess.Popen[str]] = []
    started = time.monotonic()
    while (elapsed := time.monotonic() - started) < profile.scenario_seconds:
        while events and events[0].at <= elapsed:
            event = events.pop(0)
            injected.append(
                (round((harness.clock().now() - start).total_seconds(), 1), event.fault)
            )
            harness.inject(event, rng, faults, restarts)
            if event.fault == "restart_postgres":
                recovered.append(harness.through_pooler_after_restart())
        if not exports and elapsed >= profile.scenario_seconds * 0.8:
            run_dir = harness.procs[0].directory
            exports = [start_export(harness, run_dir, server_side=s) for s in (False, True)]
        for due, proc in [r for r in restarts if r[0] <= time.monotonic()]:
            restarts.remove((due, proc))
            proc.start()
        waiting = {id(proc) for _, proc in restarts}
        for proc in harness.procs:
            if not proc.alive() and id(proc) not in waiting:
                faults[f"{proc.kind}_exited"] += 1  # restarted, as a supervisor would
                proc.start()
        time.sleep(0.2)
    harness.exports = {
        "with DISABLE_SERVER_SIDE_CURSORS": export_outcome(exports[0]) if exports else {},
        "with server-side cursors": export_outcome(exports[1]) if exports else {},
    }
    return faults, recovered, injected


def run_workload(harness: MultiHost, profile: Profile) -> dict[str, Any]:
    """Start the hosts' processes, create the schedules, inject the faults, drain, check."""
    rng = random.Random(f"{harness.seed}:multihost")
    harness.reset(0.0)
    run_dir: Path = harness.directory / "multihost"
    shutil.rmtree(run_dir, ignore_errors=True)  # the logs are appended to: one run's only
    run_dir.mkdir(parents=True)
    harness.procs = harness.processes(profile, run_dir)
    for proc in harness.procs:
        proc.start()
    _wait(lambda: all(p.ready() for p in harness.procs), 120, "beats and workers to start")
    clock = harness.clock()
    start = clock.now()
    specs = generate(rng, profile, start)
    logging.disable(logging.INFO)  # the run's own lines only, not each schedule and drain step
    create(specs, start)
    load_before = os.getloadavg()[0]
    faults, recovered, injected = run_faults(harness, profile, rng, start)
    for proc in harness.procs:
        if proc.kind == "beat":
            proc.stop()
    until = clock.now()
    drained = harness.drain(until, run_dir)
    executions = executions_by_worker(harness.procs)
    for proc in harness.procs:
        proc.stop()
    verdict = check("multihost", specs, until)
    verdict.faults = faults
    exported = harness.exports["with DISABLE_SERVER_SIDE_CURSORS"]
    return {
        "line": verdict.line() + f"; export through PgBouncer: {exported}",
        "ok": verdict.ok and exported.get("returncode") == 0 and exported.get("exported", 0) > 0,
        "export_during_load": harness.exports,
        "problems": verdict.problems[:50],
        "schedules": len(specs),
        "seconds": profile.scenario_seconds,
        "slots_per_s": round(verdict.slots_expected / profile.scenario_seconds, 1),
        "drain_s": round(drained, 1),
        "pooler_back_after_restart_s": recovered,
        "lateness_s": _lateness(),
        "fault_at_s": injected,
        "lateness_by_10s": lateness_by_window(start),
        "load_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "outcomes": _outcomes(),
        "executions_by_worker": executions,
        **from_logs(harness.procs),
        **{k: v for k, v in vars(verdict).items() if k not in ("problems", "faults", "scenario")},
        "faults": dict(faults),
    }
