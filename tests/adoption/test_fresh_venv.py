"""The fresh-venv adoption test: what a new user does, from the built wheel to a schedule that
ran, by following docs/install.md literally (issue 13).

`make dist` builds the wheel; its file list must hold the library only. Then, for each broker,
a virtualenv outside the repository gets the wheel from pip (with the `[redis]` extra for
Redis; without extras for RabbitMQ, which proves the AMQP path needs neither `redis` nor
`packaging`), a project is made by running every block of docs/install.md in order, and a
worker and a beat run until the schedule's occurrence has succeeded.

The only departures from the page, each forced by the test itself: `pip install` gets the
wheel's path instead of the name (the distribution is not on the index), the broker URL comes
from `CELERY_BROKER_URL` (the page's settings read it), and the two long-running `celery`
commands run in the background instead of "in their own terminal".

Run it with `make test-adoption` (part of `make test`). It needs Redis and RabbitMQ: missing
servers fail the test in CI and skip it elsewhere.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.conftest import require_server

pytestmark = pytest.mark.adoption

REPO = Path(__file__).resolve().parents[2]
INSTALL_PAGE = REPO / "docs" / "install.md"
RABBITMQ_URL = os.environ.get("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672//")
DISTRIBUTION = "django-durable-scheduler"
SUCCESS_TIMEOUT = 120.0
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


@dataclass
class Block:
    language: str
    text: str

    @property
    def directive(self) -> tuple[str, str] | None:
        """(``file``/``append to``/``in``, argument) from the block's first comment line."""
        first = self.text.splitlines()[0] if self.text else ""
        match = re.match(r"#\s*(file|append to|in):\s*(.+)$", first)
        return (match.group(1), match.group(2).strip()) if match else None


def install_blocks() -> list[Block]:
    return [Block(m.group(1), m.group(2)) for m in BLOCK.finditer(INSTALL_PAGE.read_text())]


# -- the distribution ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        ["make", "dist", f"DIST_DIR={out}"], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def the_wheel(dist: Path) -> Path:
    (wheel,) = dist.glob("*.whl")
    return wheel


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
    for extra in ("redis", "postgres", "results", "metrics"):
        assert f"Provides-Extra: {extra}" in text
    assert "Framework :: Django :: 4.2" in text and "Project-URL: Changelog" in text


def test_the_sdist_leaves_the_example_project_out(dist: Path) -> None:
    import tarfile

    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        tops = {name.split("/")[1] for name in archive.getnames() if name.count("/")}
    assert "scheduler_app" in tops
    assert not tops & {"project", "bench", "torture", "tests", "var", "docs"}


# -- a new user's project --------------------------------------------------------------------


@dataclass
class Project:
    root: Path
    venv: Path
    env: dict[str, str]
    logs: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    files: list[BinaryIO] = field(default_factory=list)

    def run(self, command: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            command,
            shell=True,
            cwd=self.root,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"`{command}` failed:\n{done.stdout[-3000:]}{done.stderr}"
        return done

    def start(self, command: str, name: str) -> None:
        log = (self.logs / f"{name}.log").open("wb")
        self.files.append(log)
        self.processes.append(
            subprocess.Popen(
                command,
                shell=True,
                cwd=self.root,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(5)
        for log in self.files:
            log.close()


def clean_environment(venv: Path, broker: str) -> dict[str, str]:
    """The user's shell: the venv first on PATH, nothing of this repository's settings."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DJANGO_SETTINGS_MODULE", "PYTHONPATH", "DATABASE_URL", "VIRTUAL_ENV")
        and not key.startswith(("SCHEDULER_", "CELERY_", "PROJECT_"))
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env["CELERY_BROKER_URL"] = broker
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def pip_target(command: str, wheel: Path, extras: str) -> str:
    """`pip install "django-durable-scheduler[redis]"` -> the same with the wheel's path."""
    requirement = f'"{wheel}[{extras}]"' if extras else f'"{wheel}"'
    return re.sub(rf'"?{DISTRIBUTION}(\[[^\]]*\])?"?', requirement, command)


def follow_install_page(project: Project, wheel: Path, extras: str) -> list[str]:
    """Run every block of docs/install.md in order; return the commands it left for later
    (after the services run), i.e. the ones after `celery ... beat`."""
    later: list[str] = []
    services_started = False
    for block in install_blocks():
        directive = block.directive
        if block.language == "python3":  # file contents: the docs-examples test skips them
            assert directive is not None, f"a python block without a directive:\n{block.text}"
            kind, argument = directive
            if kind == "file":
                path = project.root / argument
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(block.text)
            elif kind == "append to":
                with (project.root / argument).open("a") as target:
                    target.write("\n" + block.text)
            else:
                assert argument == "python manage.py shell", argument
                project.run("python manage.py shell", stdin=block.text)
            continue
        assert block.language == "sh", block.language
        for command in block.text.splitlines():
            command = command.strip()
            if not command or command.startswith("#"):
                continue
            if command.startswith("pip install"):
                project.run(pip_target(command, wheel, extras))
            elif re.match(r"celery -A \w+ (worker|beat)\b", command):
                project.start(command, command.split()[3])
                services_started = True
            elif services_started:
                later.append(command)
            else:
                done = project.run(command)
                if command == "python manage.py check":
                    assert "System check identified no issues" in done.stdout, done.stderr
    assert len(project.processes) == 2, "the page must start a worker and a beat"
    return later


def wait_for_success(project: Project) -> dict[str, object]:
    deadline = time.monotonic() + SUCCESS_TIMEOUT
    rows: list[dict[str, object]] = []
    while time.monotonic() < deadline:
        for process, name in zip(project.processes, ("worker", "beat"), strict=False):
            assert process.poll() is None, f"{name} exited:\n{project.log(name)[-4000:]}"
        done = project.run("python manage.py list_schedules --json")
        rows = json.loads(done.stdout)
        last = rows[0]["last_run"] if rows else None
        if isinstance(last, dict) and last["state"] == "succeeded":
            return rows[0]
        time.sleep(1)
    pytest.fail(
        f"no occurrence succeeded within {SUCCESS_TIMEOUT} s: {rows}\n"
        f"--- worker\n{project.log('worker')[-4000:]}\n--- beat\n{project.log('beat')[-4000:]}"
    )


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


def adopt(tmp_path: Path, dist: Path, broker: str, extras: str) -> None:
    venv = tmp_path / "venv"
    root = tmp_path / "site"
    logs = tmp_path / "logs"
    for folder in (root, logs):
        folder.mkdir()
    assert not root.resolve().is_relative_to(REPO)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    project = Project(root, venv, clean_environment(venv, broker), logs)
    try:
        later = follow_install_page(project, the_wheel(dist), extras)
        assert "python manage.py list_schedules" in later
        row = wait_for_success(project)
        for command in later:
            output = project.run(command).stdout
            if command == "python manage.py list_schedules":
                assert "reports.send_report" in output and "succeeded" in output, output
    finally:
        project.stop()
    assert row["task"] == "reports.send_report"
    worker, beat = project.log("worker"), project.log("beat")
    assert "ModuleNotFoundError" not in worker + beat
    assert re.search(r"Task reports\.send_report\[.*\] succeeded .*report sent to ops", worker)
    assert "maxinterval -> 5.00 seconds" in beat
    assert "scheduler_app.beat.DurableScheduler" in beat
    # The library came from the wheel in the venv, not from this checkout.
    origin = project.run(
        "python -c 'import scheduler_app, sys; print(scheduler_app.__file__)'"
    ).stdout.strip()
    assert origin.startswith(str(venv)), origin
    shown = project.run("python -c 'import project' 2>&1 || true").stdout
    assert "No module named 'project'" in shown, shown
    if not extras:
        # Issue 13: the beat and the worker crashed on `packaging` (kombu's Redis transport)
        # without the redis extra. Here neither is installed, and both ran.
        for module in ("redis", "packaging"):
            absent = project.run(f"python -c 'import {module}' 2>&1 || true").stdout
            assert f"No module named '{module}'" in absent, absent


def test_a_new_project_runs_a_schedule_on_redis(tmp_path: Path, dist: Path, redis_url: str) -> None:
    adopt(tmp_path, dist, redis_url, "redis")


def test_a_new_project_runs_a_schedule_on_rabbitmq_without_extras(
    tmp_path: Path, dist: Path, rabbitmq_vhost: str
) -> None:
    adopt(tmp_path, dist, rabbitmq_vhost, "")
