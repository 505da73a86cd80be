"""The fresh-venv adoption test of the django.tasks target (issue 23, "done when"): the built
wheel with ``[tasks,postgres]`` in a virtualenv outside the repository, a new ``startproject``
with no Celery configuration at all (docs/django-tasks.md's settings), a
``@scheduled(every="10s")`` django.tasks task in an app's ``tasks.py``, two
``manage.py run_scheduler`` racing on PostgreSQL and django-tasks-db's ``manage.py db_worker``:
the task runs to ``succeeded``, no slot has two occurrences and no occurrence two effects.

Part of ``make test-adoption``; needs PostgreSQL (``PG_URL``) and the package index.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from tests.adoption.venvs import interpreter
from tests.conftest import require_server

pytestmark = pytest.mark.adoption

PG_URL = os.environ.get("PG_URL", "postgres://postgres@127.0.0.1:5432/test")
SUCCESS_TIMEOUT = 120.0

SETTINGS = """
import os

import dj_database_url

INSTALLED_APPS += ["django_tasks_db", "scheduler_app", "myapp"]
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
DATABASES = {"default": dj_database_url.parse(os.environ["DATABASE_URL"])}
"""
BACKPORT_SETTINGS = """
INSTALLED_APPS += ["django_tasks"]
"""
"""docs/django-tasks.md's settings: the backport's app on Django 5.2 only."""

TASKS = """
import os

try:
    from django.tasks import task
except ImportError:
    from django_tasks import task

from scheduler_app.context import current_occurrence
from scheduler_app.declarations import scheduled


@scheduled(every="10s")
@task()
def heartbeat() -> dict[str, str]:
    occurrence = current_occurrence()
    with open(os.environ["EFFECTS"], "a") as effects:
        effects.write(f"{occurrence.idempotency_key}\\n")
    return {"key": occurrence.idempotency_key}
"""

REPORT = """
import json
from scheduler_app.models import Occurrence
rows = Occurrence.objects.values_list("schedule_id", "scheduled_for", "state", "target")
print(json.dumps([[str(s), t.isoformat(), state, target] for s, t, state, target in rows]))
"""


@pytest.fixture
def database() -> Iterator[str]:
    require_server("PostgreSQL", PG_URL, 5432)
    parts = urlsplit(PG_URL)
    name = f"adoption_tasks_{uuid.uuid4().hex[:8]}"
    server = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    yield urlunsplit(parts._replace(path=f"/{name}"))
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


ENDS = [("3.13", "6.1"), ("3.11", "5.2")]
"""The supported ends (issue 36): Python -> the Django pip picks for it. On 6.1 the task is
Django's own ``django.tasks``; on 5.2 the backport that ``[tasks]`` brings on Python 3.11."""


@pytest.mark.parametrize(("version", "django"), ENDS, ids=[f"python{p}" for p, _ in ENDS])
def test_a_new_project_without_celery_runs_a_django_task(
    tmp_path: Path, dist: Path, database: str, version: str, django: str
) -> None:
    [wheel] = dist.glob("*.whl")
    venv = tmp_path / "venv"
    subprocess.run([interpreter(version), "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", f"{wheel}[tasks,postgres]", "dj-database-url"],
        check=True,
    )
    project = tmp_path / "site"
    project.mkdir()
    subprocess.run(
        [str(venv / "bin" / "django-admin"), "startproject", "mysite", "."], cwd=project, check=True
    )
    env = {
        "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "mysite.settings",
        "DATABASE_URL": database,
        "EFFECTS": str(tmp_path / "effects"),
    }
    manage = [python, "manage.py"]
    shown = subprocess.run(
        [python, "-c", "import django; print(django.get_version())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert shown.startswith(f"{django}."), shown
    subprocess.run([*manage, "startapp", "myapp"], cwd=project, env=env, check=True)
    with (project / "mysite" / "settings.py").open("a") as settings:
        settings.write(SETTINGS + (BACKPORT_SETTINGS if django.startswith("5.") else ""))
    (project / "myapp" / "tasks.py").write_text(TASKS)
    subprocess.run([*manage, "migrate", "-v0"], cwd=project, env=env, check=True)
    logs = [(tmp_path / f"{name}.log").open("w") for name in ("s1", "s2", "worker")]
    commands = [
        [*manage, "run_scheduler", "--owner", "s1"],
        [*manage, "run_scheduler", "--owner", "s2"],
        [*manage, "db_worker", "--no-reload", "--interval", "0.5"],
    ]
    processes = [
        subprocess.Popen(command, cwd=project, env=env, stdout=log, stderr=subprocess.STDOUT)
        for command, log in zip(commands, logs, strict=True)
    ]
    try:
        rows = _wait(manage, project, env)
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        codes = [process.wait(timeout=30) for process in processes]
        for log in logs:
            log.close()
    output = "".join((tmp_path / f"{n}.log").read_text() for n in ("s1", "s2", "worker"))
    assert codes == [0, 0, 0], output
    assert "celery" not in (project / "mysite" / "settings.py").read_text().lower()
    slots = Counter((schedule, slot) for schedule, slot, _, _ in rows)
    assert max(slots.values()) == 1  # no slot twice
    assert {target for *_, target in rows} == {"django_tasks"}
    effects = Counter((tmp_path / "effects").read_text().split())
    assert max(effects.values()) == 1, effects  # no effect twice


def _wait(manage: list[str], project: Path, env: dict[str, str]) -> list[list[str]]:
    deadline = time.monotonic() + SUCCESS_TIMEOUT
    rows: list[list[str]] = []
    while time.monotonic() < deadline:
        done = subprocess.run(
            [*manage, "shell", "-c", REPORT], cwd=project, env=env, capture_output=True, text=True
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("[")]
        rows = json.loads(lines[-1]) if lines else []
        if any(state == "succeeded" for _, _, state, _ in rows):
            return rows
        time.sleep(1)
    raise AssertionError(f"no occurrence succeeded in {SUCCESS_TIMEOUT} s: {rows}")
