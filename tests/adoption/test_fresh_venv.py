"""The fresh-venv adoption test: what a new user does, from the built wheel to a schedule that
ran and an admin that serves every page, by following docs/install.md literally (issues 13, 21).

`make dist` builds the wheel; its file list must hold the library only. Then a virtualenv
outside the repository gets the wheel as the page's "from a checkout" block installs it, a
project is made by running every block of the page in order, a worker and a beat run until
the schedule's occurrence has succeeded, and every page of the scheduler's admin answers 200
through the project's runserver. Three ways through the page:

- SQLite and Redis with the default extra only, `[redis]` (no django-celery-results);
- PostgreSQL and Redis, `[redis,postgres]`, then the page's optional task-results section
  (`[results]`, migrate, restart) and every admin page again;
- SQLite and RabbitMQ without extras (the AMQP path needs neither `redis` nor `packaging`).

The only departures from the page, each forced by the test itself: `make -C "$CHECKOUT" dist`
runs once for all three (the `checkout` fixture, into the `dist/` the page installs from);
the broker URL and PostgreSQL's settings come from the environment the page's settings read;
`createsuperuser` gets `--noinput` and its answers from `DJANGO_SUPERUSER_*`; `runserver` gets
a free port; the long-running commands run in the background instead of "in their own
terminal".

Run it with `make test-adoption` (part of `make test`). It needs Redis, RabbitMQ and
PostgreSQL (`PG_URL`, default postgres://postgres@127.0.0.1:5432/test; the test makes and
drops a database of its own next to it): missing servers fail the test in CI and skip it
elsewhere.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.adoption.admin_pages import ENUMERATE, MUST_OPEN, Browser, admin_pages
from tests.adoption.install_page import (
    REPO,
    SUPERUSER,
    PageRunner,
    Project,
    Setup,
    install_blocks,
)
from tests.adoption.venvs import PG_URL, free_port, interpreter, new_project
from tests.adoption.venvs import postgres_database as own_database
from tests.conftest import require_server

pytestmark = pytest.mark.adoption

RABBITMQ_URL = os.environ.get("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672//")
SUCCESS_TIMEOUT = 120.0
MakeProject = Callable[[str], Project]
"""A new user's project (a fresh virtualenv) on the given broker."""


def the_wheel(dist: Path) -> Path:
    (wheel,) = dist.glob("*.whl")
    return wheel


# -- the distribution ----------------------------------------------------------------------


def test_the_wheel_holds_the_library_only(dist: Path) -> None:
    names = zipfile.ZipFile(the_wheel(dist)).namelist()
    tops = {name.split("/")[0] for name in names}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"scheduler_app"}
    assert not [n for n in names if n.startswith(("project/", "bench/", "torture/", "tests/"))]
    assert "scheduler_app/py.typed" in names
    assert "scheduler_app/migrations/0001_initial.py" in names
    package = REPO / "scheduler_app"
    shipped = [
        path.relative_to(REPO).as_posix()
        for folder in ("templates", "static", "migrations")
        for path in (package / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    ]
    assert shipped and not [path for path in shipped if path not in names]
    (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    text = zipfile.ZipFile(the_wheel(dist)).read(metadata).decode()
    required = [
        line.split(":", 1)[1].strip()
        for line in text.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    ]
    assert not [r for r in required if r.startswith(("psycopg", "dj-database-url", "redis"))]
    for extra in ("redis", "postgres", "results", "metrics", "tasks", "tasks-backport"):
        assert f"Provides-Extra: {extra}" in text
    for supported in ("Framework :: Django :: 5.2", "Framework :: Django :: 6.1"):
        assert supported in text  # issue 36: the supported versions, as install.md says
    assert "Programming Language :: Python :: 3.13" in text and "Django :: 4.2" not in text
    assert "Requires-Dist: django<6.2,>=5.2" in text or "Requires-Dist: django>=5.2,<6.2" in text
    assert "Project-URL: Changelog" in text


def test_the_sdist_leaves_the_example_project_out(dist: Path) -> None:
    import tarfile

    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        tops = {name.split("/")[1] for name in archive.getnames() if name.count("/")}
    assert "scheduler_app" in tops
    assert not tops & {"project", "bench", "torture", "tests", "var", "docs"}


# -- a new user's project --------------------------------------------------------------------


def last_run(project: Project) -> dict[str, str] | None:
    rows = json.loads(project.run("python manage.py list_schedules --json").stdout)
    last = rows[0]["last_run"] if rows else None
    return last if isinstance(last, dict) else None


def wait_for_success(project: Project, after: str | None = None) -> dict[str, str]:
    """The schedule's last run once it succeeded (another one than ``after``)."""
    deadline = time.monotonic() + SUCCESS_TIMEOUT
    last = None
    while time.monotonic() < deadline:
        project.assert_running()
        last = last_run(project)
        if last and last["state"] == "succeeded" and last["id"] != after:
            return last
        time.sleep(1)
    pytest.fail(
        f"no occurrence succeeded within {SUCCESS_TIMEOUT} s: {last}\n"
        f"--- worker\n{project.log('worker')[-4000:]}\n--- beat\n{project.log('beat')[-4000:]}"
    )


def open_every_admin_page(project: Project, port: int) -> dict[str, tuple[int, str]]:
    """Every page of the scheduler's admin, logged in as the page's superuser: all 200."""
    pages, missing = admin_pages(project.run("python manage.py shell", stdin=ENUMERATE).stdout)
    names = {name for name, _ in pages}
    assert names >= MUST_OPEN, f"not opened: {sorted(MUST_OPEN - names)} (no row: {missing})"
    browser = Browser.login(
        f"http://127.0.0.1:{port}", SUPERUSER["username"], SUPERUSER["password"]
    )
    opened = browser.open_all(pages)
    # 405: the URL is a POST target of a page's script (the builder's preview), not a page.
    failed = {name: status for name, (status, _) in opened.items() if status not in (200, 405)}
    assert {name for name in MUST_OPEN if opened[name][0] != 200} == set()
    assert not failed, f"{failed}\n--- runserver\n{project.log('runserver')[-3000:]}"
    return opened


def adopt(project: Project, checkout: Path, setup: Setup) -> PageRunner:
    """Follow the page's main path; return its runner with the admin open (runserver up)."""
    main, _ = install_blocks()
    runner = PageRunner(project, setup, checkout, free_port())
    runner.follow(main)
    assert project.services.keys() == {"worker", "beat"}, "the page starts a worker and a beat"
    assert "python manage.py list_schedules" in runner.later
    wait_for_success(project)
    outputs = runner.run_later()
    listed = outputs["python manage.py list_schedules"]
    assert "reports.send_report" in listed and "succeeded" in listed, listed
    assert "runserver" in project.services, "the page starts the admin (runserver)"
    open_every_admin_page(project, runner.port)
    return runner


def assert_ran_from_the_wheel(project: Project, extras: str) -> None:
    worker, beat = project.log("worker"), project.log("beat")
    assert "ModuleNotFoundError" not in worker + beat + project.log("runserver")
    assert re.search(r"Task reports\.send_report\[.*\] succeeded .*report sent to ops", worker)
    assert "maxinterval -> 5.00 seconds" in beat
    assert "scheduler_app.beat.DurableScheduler" in beat
    # The library came from the wheel in the venv, not from this checkout.
    origin = project.run(
        "python -c 'import scheduler_app, sys; print(scheduler_app.__file__)'"
    ).stdout.strip()
    assert origin.startswith(str(project.venv)), origin
    absent = ["project"] + ([] if "results" in extras else ["django_celery_results"])
    if not extras:
        # Issue 13: the beat and the worker crashed on `packaging` (kombu's Redis transport)
        # without the redis extra. Here neither is installed, and both ran.
        absent += ["redis", "packaging"]
    for module in absent:
        shown = project.run(f"python -c 'import {module}' 2>&1 || true").stdout
        assert f"No module named '{module}'" in shown, shown


ENDS = [("3.13", "6.1"), ("3.11", "5.2")]
"""The supported ends (docs/install.md): Python -> the Django that pip picks for it."""


@pytest.fixture
def project_on(tmp_path: Path) -> Iterator[MakeProject]:
    made: list[Project] = []

    def make(broker: str, python: str = sys.executable) -> Project:
        made.append(new_project(tmp_path, broker, python))
        return made[-1]

    yield make
    for project in made:
        project.close()


@pytest.mark.parametrize(("python", "django"), ENDS, ids=[f"python{p}" for p, _ in ENDS])
def test_a_new_project_on_sqlite_with_the_default_extra_serves_every_admin_page(
    checkout: Path, project_on: MakeProject, redis_url: str, python: str, django: str
) -> None:
    """Issue 21: with `[redis]` only (no django-celery-results) every occurrence page was 500.
    Issue 36: at both supported ends, pip installing the wheel keeps the newest Django that
    Python runs (6.1 on 3.13, 5.2 on 3.11) and the page's steps reach a succeeded run."""
    project = project_on(redis_url, interpreter(python))
    adopt(project, checkout, Setup("sqlite", "redis"))
    assert_ran_from_the_wheel(project, "redis")
    shown = project.run("python -c 'import django; print(django.get_version())'").stdout
    assert shown.strip().splitlines()[-1].startswith(f"{django}."), shown


@pytest.fixture
def postgres_database() -> Iterator[dict[str, str]]:
    """A database of its own on the PG_URL server; the POSTGRES_* the page's settings read."""
    require_server("PostgreSQL", PG_URL, 5432)
    with own_database() as env:
        yield env


def test_a_new_project_on_postgresql_then_with_task_results(
    checkout: Path, project_on: MakeProject, redis_url: str, postgres_database: dict[str, str]
) -> None:
    """PostgreSQL as the page says (its own DATABASES block, no SQLite options), then the
    optional task-results section: every admin page again, the occurrence linked to its
    result."""
    project = project_on(redis_url)
    project.env |= postgres_database
    runner = adopt(project, checkout, Setup("postgresql", "redis,postgres"))
    assert_ran_from_the_wheel(project, "redis,postgres")
    engine = project.run(
        "python manage.py shell -c 'from django.db import connection; print(connection.vendor)'"
    )
    assert engine.stdout.strip().splitlines()[-1] == "postgresql", engine.stdout

    before = last_run(project)
    runner.setup = Setup("postgresql", "redis,postgres", results=True)
    runner.install("redis,postgres,results")
    _, results = install_blocks()
    runner.follow(results)
    project.restart(["worker", "beat", "runserver"])
    wait_for_success(project, after=before["id"] if before else None)
    opened = open_every_admin_page(project, runner.port)
    _, occurrence_page = opened["scheduler_app_occurrence_change"]
    assert "django_celery_results/taskresult/" in occurrence_page, occurrence_page[-3000:]


@pytest.fixture
def rabbitmq_vhost() -> Iterator[str]:
    """A vhost of its own (when rabbitmqctl can make one), so no other queue is touched."""
    require_server("RabbitMQ", RABBITMQ_URL, 5672)
    ctl = shutil.which("rabbitmqctl")
    name = f"adoption-{uuid.uuid4().hex[:8]}"
    made = ctl is not None and (
        subprocess.run([ctl, "add_vhost", name], capture_output=True).returncode == 0
    )
    if not made:
        yield RABBITMQ_URL
        return
    assert ctl is not None
    subprocess.run(
        [ctl, "set_permissions", "-p", name, "guest", ".*", ".*", ".*"],
        capture_output=True,
        check=True,
    )
    yield urlunsplit(urlsplit(RABBITMQ_URL)._replace(path=f"/{name}"))
    subprocess.run([ctl, "delete_vhost", name], capture_output=True)


def test_a_new_project_runs_a_schedule_on_rabbitmq_without_extras(
    checkout: Path, project_on: MakeProject, rabbitmq_vhost: str
) -> None:
    project = project_on(rabbitmq_vhost)
    adopt(project, checkout, Setup("sqlite", ""))
    assert_ran_from_the_wheel(project, "")
