"""The fresh-venv adoption test of the event target (issue 40, "done when"): the built wheel
with ``[events]`` in a virtualenv outside the repository, a new ``startproject`` on SQLite with
no Celery and no django.tasks, four schedules declared with ``declare_event`` in an app's
``tasks.py``, and ``manage.py run_event_deliveries --beat`` delivering them to a receiver in
this process that verifies every signature (Standard Webhooks) and deduplicates on
``webhook-id``, as docs/events.md tells a receiver to:

- ``demo.ok`` answers 200: ``succeeded``;
- ``demo.flaky`` answers 503, then 200: retried, then ``succeeded`` (2 attempts);
- ``demo.rejected`` answers 400: ``failed`` at once;
- ``demo.killed``: the receiver accepts it and holds the answer while the test kills the
  delivery process (SIGKILL); a new process delivers it again after the claim's lease, and
  the receiver, which had accepted it, does not accept it twice.

Each ends exactly once in the ledger (one occurrence per schedule), and no ``webhook-id`` is
accepted twice. Part of ``make test-adoption``; needs the package index.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.adoption.venvs import interpreter
from tests.integration.event_receiver import SECRET, Receiver, receiving

pytestmark = pytest.mark.adoption

TIMEOUT = 150.0

SETTINGS = """
INSTALLED_APPS += ["scheduler_app", "myapp"]
SCHEDULER_EVENT_ENDPOINTS = {{
    "local": {{"url": "http://127.0.0.1:{port}/hooks", "secrets": ["{secret}"]}},
}}
SCHEDULER_EVENT_ALLOWED_HOSTS = ["127.0.0.1"]  # a receiver on this machine (docs/events.md)
SCHEDULER_EVENT_TIMEOUT = 3.0
SCHEDULER_RECONCILE_INTERVAL = 2.0
"""

TASKS = """
from datetime import datetime

from scheduler_app.declarations import declare_event

SOON = datetime.fromisoformat("{soon}")  # the same in every process that imports this

for name in ("ok", "flaky", "rejected", "killed"):
    declare_event(
        f"demo.{{name}}",
        endpoint="local",
        at=SOON,
        kwargs={{"name": name}},
        max_attempts=3,
        retry_delay=1,
    )
"""

REPORT = """
import json
from scheduler_app.models import Occurrence
rows = Occurrence.objects.values_list("task", "state", "reason", "attempts", "id")
print(json.dumps([[*row[:4], str(row[4])] for row in rows]))
"""


class Scripted(Receiver):
    """The receiver, answering by event type; ``demo.killed``'s first request is accepted and
    then held until ``release`` is set (the process that sent it is killed meanwhile)."""

    def __init__(self) -> None:
        super().__init__()
        self.held = threading.Event()
        self.release = threading.Event()
        self.seen: dict[str, int] = {}

    def receive(
        self,
        headers: dict[str, str],
        body: bytes,
        answer: tuple[int, dict[str, str]] | None = None,
    ) -> tuple[int, dict[str, str]]:
        kind = json.loads(body).get("type", "")
        with self.lock:
            self.seen[kind] = self.seen.get(kind, 0) + 1
            times = self.seen[kind]
        if kind == "demo.flaky" and times == 1:
            answer = (503, {"Retry-After": "1"})
        elif kind == "demo.rejected":
            answer = (400, {})
        answered = super().receive(headers, body, answer or (200, {}))
        if kind == "demo.killed" and times == 1:
            self.held.set()
            self.release.wait(30)
        return answered


@pytest.fixture
def receiver() -> Iterator[Scripted]:
    scripted = Scripted()
    with receiving(scripted) as running:
        yield running  # type: ignore[misc]
        running.release.set()


def test_a_new_project_delivers_signed_events_exactly_once(
    tmp_path: Path, dist: Path, receiver: Scripted
) -> None:
    [wheel] = dist.glob("*.whl")
    venv = tmp_path / "venv"
    subprocess.run([interpreter("3.11"), "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "--quiet", f"{wheel}[events]"], check=True)
    project = tmp_path / "site"
    project.mkdir()
    subprocess.run(
        [str(venv / "bin" / "django-admin"), "startproject", "mysite", "."], cwd=project, check=True
    )
    env = {
        "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "mysite.settings",
    }
    manage = [python, "manage.py"]
    subprocess.run([*manage, "startapp", "myapp"], cwd=project, env=env, check=True)
    with (project / "mysite" / "settings.py").open("a") as settings:
        settings.write(SETTINGS.format(port=receiver.port, secret=SECRET))
    soon = datetime.now(UTC) + timedelta(seconds=20)  # after the migrations and the start
    (project / "myapp" / "tasks.py").write_text(TASKS.format(soon=soon.isoformat()))
    subprocess.run([*manage, "migrate", "-v0"], cwd=project, env=env, check=True)
    command = [*manage, "run_event_deliveries", "--beat", "-v", "1"]
    first_log = (tmp_path / "first.log").open("w")
    first = subprocess.Popen(command, cwd=project, env=env, stdout=first_log, stderr=first_log)
    try:
        assert receiver.held.wait(60), (tmp_path / "first.log").read_text()
        # Killed once the others' outcomes are written: only demo.killed is in flight.
        _wait(manage, project, env, lambda ended: {"event:demo.ok", "event:demo.rejected"} <= ended)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        first_log.close()
    receiver.release.set()
    second_log = (tmp_path / "second.log").open("w")
    second = subprocess.Popen(command, cwd=project, env=env, stdout=second_log, stderr=second_log)
    try:
        rows = _wait(manage, project, env, lambda ended: len(ended) == 4)
    finally:
        second.send_signal(signal.SIGTERM)
        code = second.wait(timeout=30)
        second_log.close()
    logs = (tmp_path / "first.log").read_text() + (tmp_path / "second.log").read_text()
    assert code == 0, logs
    ended = {task: (state, reason, attempts) for task, state, reason, attempts, _ in rows}
    seen = f"{ended}\nrequests by type: {receiver.seen}\n{logs[-6000:]}"
    assert len(rows) == 4, rows  # one occurrence per schedule: each ends once in the ledger
    assert (ended["event:demo.ok"][0], ended["event:demo.ok"][2]) == ("succeeded", 1), seen
    assert (ended["event:demo.flaky"][0], ended["event:demo.flaky"][2]) == ("succeeded", 2), seen
    assert ended["event:demo.rejected"][:2] == ("failed", "rejected")
    assert ended["event:demo.killed"][0] == "succeeded"
    assert receiver.bad_signatures == 0
    ids = {pk for *_, pk in rows}
    assert set(receiver.accepted) == ids - {_id(rows, "event:demo.rejected")}
    assert receiver.duplicates == 1  # demo.killed, delivered again after the kill
    sent = [request["headers"]["webhook-id"] for request in receiver.requests]
    assert sent.count(_id(rows, "event:demo.killed")) == 2, sent


def _id(rows: list[list[Any]], task: str) -> str:
    return next(pk for name, *_, pk in rows if name == task)


def _wait(
    manage: list[str], project: Path, env: dict[str, str], done: Callable[[set[str]], bool]
) -> list[list[Any]]:
    """The ledger's rows once ``done`` holds for the tasks whose occurrence has ended."""
    deadline = time.monotonic() + TIMEOUT
    rows: list[list[Any]] = []
    while time.monotonic() < deadline:
        shown = subprocess.run(
            [*manage, "shell", "-c", REPORT], cwd=project, env=env, capture_output=True, text=True
        )
        lines = [line for line in shown.stdout.splitlines() if line.startswith("[")]
        rows = json.loads(lines[-1]) if lines else []
        ended = {task for task, state, *_ in rows if state in ("succeeded", "failed")}
        if done(ended):
            return rows
        time.sleep(1)
    raise AssertionError(f"the events did not end in {TIMEOUT} s: {rows}")
