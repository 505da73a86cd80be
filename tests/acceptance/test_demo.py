"""``make demo`` for real: SQLite, kombu's filesystem broker, a beat and a worker process.

Each run gets its own var dir (``PROJECT_VAR_DIR``) and an environment without the test's
``DATABASE_URL``/``CELERY_BROKER_URL``, so it runs exactly as on a fresh machine.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest

from tests.adoption.admin_pages import Browser

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
STARTED = re.compile(r"started (worker|beat|admin) \(pid (\d+)\)")
STOPPED = "beat and worker stopped (exit codes 0, 0)"
ADMIN_STOPPED = "admin stopped (exit code 0)"
LOGIN = re.compile(r"admin: (http://127\.0\.0\.1:\d+)/admin/  login: (\S+) / (\S+)")


def demo_env(var: Path) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("DATABASE_URL", "CELERY_BROKER_URL")
    }
    env["PROJECT_VAR_DIR"] = str(var)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    if status.exists():  # a zombie is not running (its parent has not reaped it yet)
        return "\nState:\tZ" not in status.read_text()
    return True


def child_pids(output: str) -> dict[str, int]:
    return {name: int(pid) for name, pid in STARTED.findall(output)}


def occurrences(var: Path) -> list[tuple[str, str, str]]:
    with closing(sqlite3.connect(var / "demo.sqlite3")) as db:
        return db.execute(
            "SELECT s.name, o.state, o.trigger FROM scheduler_app_occurrence o "
            "JOIN scheduler_app_schedule s ON s.id = o.schedule_id ORDER BY o.scheduled_for"
        ).fetchall()


def assert_stopped_cleanly(output: str, var: Path) -> None:
    pids = child_pids(output)
    assert set(pids) == {"worker", "beat", "admin"}, output
    assert STOPPED in output and ADMIN_STOPPED in output, output[-3000:]
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in pids.values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in pids.values()), f"left running: {pids}"
    assert not (var / "beat.pid").exists(), "beat did not remove its pidfile (unclean exit)"


class Demo:
    """The demo as a subprocess in its own process group, its output in a file."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.var = tmp_path / "var"
        self.output_path = tmp_path / "demo-output.txt"
        with self.output_path.open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "project.demo.run", *args],
                cwd=REPO_ROOT,
                env=demo_env(self.var),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def output(self) -> str:
        return self.output_path.read_text()

    def wait_for_output(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output:
            assert self.process.poll() is None, self.output[-3000:]
            assert time.monotonic() < deadline, f"no {text!r} in {self.output[-3000:]}"
            time.sleep(0.2)

    def cleanup(self) -> None:
        """Whatever happened, leave nothing running."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # the demo stops its children
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        for pid in child_pids(self.output).values():
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Callable[..., Demo]]:
    started: list[Demo] = []

    def start(*args: str) -> Demo:
        started.append(Demo(tmp_path, *args))
        return started[-1]

    yield start
    for each in started:
        each.cleanup()


def test_demo_runs_schedules_and_stops(demo: Callable[..., Demo]) -> None:
    run = demo("--duration", "45")
    assert run.process.wait(timeout=150) == 0, run.output[-3000:]
    assert_stopped_cleanly(run.output, run.var)

    rows = occurrences(run.var)
    states = [state for _, state, _ in rows]
    assert "failed" not in states, rows
    succeeded = [name for name, state, _ in rows if state == "succeeded"]
    # 45 s: at least 3 slots of the 10 s schedule, 1 of the 20 s one and the one-time run at +30 s.
    assert succeeded.count("every 10 seconds") >= 3, rows
    assert "every 20 s, fire_once on misfire" in succeeded, rows
    assert succeeded.count("one-time, 30 s after start") == 1, rows
    # Only the last slots may still be on their way when the demo stops.
    assert len(succeeded) >= len(rows) - 3, rows
    assert "succeeded" in run.output  # the live table showed them
    # Beat and worker share one SQLite file: they wait for each other's write lock (IMMEDIATE
    # transactions) instead of failing; an outcome lost that way left an occurrence running.
    log = (run.var / "demo-processes.log").read_text()
    assert "database is locked" not in log, log[-3000:]


def test_the_admin_answers_with_the_printed_login_and_ctrl_c_stops_everything(
    demo: Callable[..., Demo],
) -> None:
    """Issue 21: the demo serves the admin, its login printed at start; one SIGINT to the
    demo's process group (a terminal's Ctrl-C) stops the beat, the worker and the server."""
    run = demo()
    run.wait_for_output("succeeded", timeout=90)
    login = LOGIN.search(run.output)
    assert login, run.output[-3000:]
    base, user, password = login.groups()
    browser = Browser.login(base, user, password)
    status, page = browser.get("/admin/scheduler_app/schedule/")
    assert status == 200 and "every 10 seconds" in page, page[-2000:]
    assert browser.get("/admin/scheduler_app/occurrence/")[0] == 200
    assert "/static/admin/css/base.css" in page
    assert browser.get("/static/admin/css/base.css")[0] == 200  # styled, with DEBUG off
    os.killpg(run.process.pid, signal.SIGINT)
    assert run.process.wait(timeout=60) == 0, run.output[-3000:]
    assert "stopping..." in run.output
    assert_stopped_cleanly(run.output, run.var)
