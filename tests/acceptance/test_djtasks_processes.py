"""django.tasks end to end with real processes and no Celery configuration: the Celery-free
example project (``taskproject``), two ``manage.py run_scheduler`` and django-tasks-db's own
``manage.py db_worker``. Its ``@scheduled(every="10s")`` task runs to ``succeeded``, each
occurrence's effect once; SIGTERM stops every process cleanly.

On SQLite one scheduler holds the lease and the other waits; with ``DATABASE_URL`` on
PostgreSQL the two race (SKIP LOCKED) on a database of their own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import psycopg
import pytest

from tests.conftest import using_postgres

REPO_ROOT = Path(__file__).resolve().parents[2]
MANAGE = [sys.executable, str(REPO_ROOT / "manage.py")]

REPORT = """
import json
from scheduler_app.models import Occurrence
print(json.dumps([
    [str(o.pk), o.state, o.target, o.handoff_id, o.idempotency_key]
    for o in Occurrence.objects.order_by("scheduled_for")
]))
"""


@pytest.fixture
def database(tmp_path: Path) -> Iterator[str]:
    """A database of the test's own (never the test session's)."""
    if not using_postgres():
        yield f"sqlite:///{tmp_path / 'tasks.sqlite3'}"
        return
    url = urlparse(os.environ["DATABASE_URL"])
    # Its own name: two tests of this fixture may run at once (xdist), and each drops its own.
    name = f"{url.path.lstrip('/')}_taskproject_{uuid.uuid4().hex[:8]}"
    admin = urlunparse(url._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield urlunparse(url._replace(path=f"/{name}"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_run_scheduler_and_db_worker_run_a_scheduled_task(tmp_path: Path, database: str) -> None:
    effects = tmp_path / "effects"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "taskproject.settings",
        "PROJECT_VAR_DIR": str(tmp_path),
        "DATABASE_URL": database,
        "SCHEDULER_EFFECTS": str(effects),
        "PYTHONPATH": str(REPO_ROOT),
    }
    env.pop("CELERY_BROKER_URL", None)
    subprocess.run([*MANAGE, "migrate", "-v0"], env=env, check=True, cwd=tmp_path)
    logs = [open(tmp_path / f"{name}.log", "w") for name in ("s1", "s2", "worker")]  # noqa: SIM115
    commands = [
        [*MANAGE, "run_scheduler", "--owner", "s1"],
        [*MANAGE, "run_scheduler", "--owner", "s2"],
        [*MANAGE, "db_worker", "--interval", "0.2", "--no-startup-delay", "--no-reload"],
    ]
    processes = [
        subprocess.Popen(command, env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
        for command, log in zip(commands, logs, strict=True)
    ]
    try:
        rows = _wait_for_succeeded(env, tmp_path, count=2, timeout=180)
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        codes = [process.wait(timeout=30) for process in processes]
        for log in logs:
            log.close()
    output = "\n".join((tmp_path / f"{n}.log").read_text() for n in ("s1", "s2", "worker"))
    assert codes == [0, 0, 0], output
    assert "Traceback" not in output, output
    succeeded = [row for row in rows if row[1] == "succeeded"]
    assert {row[2] for row in rows} == {"django_tasks"}
    assert all(row[3] for row in succeeded)  # each linked to its django-tasks-db row
    runs = Counter(line.split()[0] for line in effects.read_text().splitlines())
    assert max(runs.values()) == 1, runs  # no effect twice
    assert {row[4] for row in succeeded} <= set(runs)


def _wait_for_succeeded(env: dict[str, str], cwd: Path, count: int, timeout: float) -> list:
    deadline = time.monotonic() + timeout
    rows: list = []
    done = None
    while time.monotonic() < deadline:
        done = subprocess.run(
            [*MANAGE, "shell", "-c", REPORT], env=env, cwd=cwd, capture_output=True, text=True
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("[")]
        rows = json.loads(lines[-1]) if lines else []
        if sum(1 for row in rows if row[1] == "succeeded") >= count:
            return rows
        time.sleep(1)
    errors = done.stderr[-2000:] if done else ""
    raise AssertionError(f"fewer than {count} succeeded in {timeout} s: {rows} {errors}")
