"""docs/install.md as a script: its blocks, and a new user's project that follows them.

The page's blocks say what they are on their first line: Python blocks carry a directive
(``# file: path``, ``# append to: path``, ``# in: python manage.py shell``), optionally limited
to one setup (``(PostgreSQL only)``, ``(SQLite only)``, ``(with [results] only)``); shell blocks
are commands, one a line, except the install block that starts ``# from a checkout`` (one
shell script: its variable carries from line to line) and the ``# once published`` one (the
same install from the package index, which has no release yet: checked, not run).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

REPO = Path(__file__).resolve().parents[2]
INSTALL_PAGE = REPO / "docs" / "install.md"
DISTRIBUTION = "django-durable-scheduler"
RESULTS_HEADING = "## Task results (optional)"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
DIRECTIVE = re.compile(r"#\s*(file|append to|in):\s*(.+?)(?:\s+\((.+) only\))?$")
MAKE_DIST = 'make -C "$CHECKOUT" dist'
PUBLISHED = f'pip install "{DISTRIBUTION}[redis]"'
CELERY = re.compile(r"celery -A \w+ (worker|beat)\b")
SUPERUSER = {"username": "admin", "password": "adoption-Pa55word", "email": "admin@example.com"}


@dataclass(frozen=True)
class Block:
    language: str
    text: str

    @property
    def directive(self) -> tuple[str, str, str | None] | None:
        """(``file``/``append to``/``in``, argument, condition or None) from the first line."""
        first = self.text.splitlines()[0] if self.text else ""
        match = DIRECTIVE.match(first)
        return (match.group(1), match.group(2).strip(), match.group(3)) if match else None


def install_blocks() -> tuple[list[Block], list[Block]]:
    """The page's blocks: the main path, and the optional task-results section."""
    text = INSTALL_PAGE.read_text()
    main, _, results = text.partition(RESULTS_HEADING)
    assert results, f"docs/install.md has no {RESULTS_HEADING!r} section"
    results = results.split("\n## ", 1)[0]

    def blocks(part: str) -> list[Block]:
        return [Block(m.group(1), m.group(2)) for m in BLOCK.finditer(part)]

    return blocks(main), blocks(results)


@dataclass(frozen=True)
class Setup:
    """One way to follow the page: the database, the extras, the optional results."""

    database: str  # "sqlite" or "postgresql"
    extras: str  # e.g. "redis,postgres"; "" for none
    results: bool = False

    def wants(self, condition: str | None) -> bool:
        known = {
            None: True,
            "PostgreSQL": self.database == "postgresql",
            "SQLite": self.database == "sqlite",
            "with [results]": self.results,
        }
        assert condition in known, f"unknown block condition {condition!r} in install.md"
        return known[condition]


@dataclass
class Service:
    command: str
    process: subprocess.Popen[bytes]


@dataclass
class Project:
    """The user's folder, virtualenv and shell; the long-running commands it started."""

    root: Path
    venv: Path
    env: dict[str, str]
    logs: Path
    services: dict[str, Service] = field(default_factory=dict)
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
        log = (self.logs / f"{name}.log").open("ab")
        self.files.append(log)
        process = subprocess.Popen(
            command,
            shell=True,
            cwd=self.root,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.services[name] = Service(command, process)

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def assert_running(self) -> None:
        for name, service in self.services.items():
            assert service.process.poll() is None, f"{name} exited:\n{self.log(name)[-4000:]}"

    def stop(self, names: list[str] | None = None) -> None:
        chosen = [self.services[name] for name in names or list(self.services)]
        for service in chosen:
            if service.process.poll() is None:
                os.killpg(service.process.pid, signal.SIGTERM)
        for service in chosen:
            try:
                service.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(service.process.pid, signal.SIGKILL)
                service.process.wait(5)

    def restart(self, names: list[str]) -> None:
        """What "restart the worker and the beat" means: stop them, start the same commands."""
        commands = {name: self.services[name].command for name in names}
        self.stop(names)
        for name, command in commands.items():
            self.start(command, name)

    def close(self) -> None:
        self.stop()
        for log in self.files:
            log.close()


@dataclass
class PageRunner:
    """Runs the page's blocks in a project; the commands after the services start wait until
    the schedule has run (``run_later``)."""

    project: Project
    setup: Setup
    checkout: Path
    port: int
    later: list[str] = field(default_factory=list)
    checkout_lines: list[str] = field(default_factory=list)
    deferring: bool = False
    """From the first service started until ``run_later``: commands wait for the first run."""

    def follow(self, blocks: list[Block]) -> None:
        for block in blocks:
            if block.language == "python3":
                self.python_block(block)
            else:
                assert block.language == "sh", block.language
                self.sh_block(block)

    def python_block(self, block: Block) -> None:
        directive = block.directive
        assert directive is not None, f"a python block without a directive:\n{block.text}"
        kind, argument, condition = directive
        if not self.setup.wants(condition):
            return
        if kind == "file":
            path = self.project.root / argument
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.text)
        elif kind == "append to":
            with (self.project.root / argument).open("a") as target:
                target.write("\n" + block.text)
        else:
            assert argument == "python manage.py shell", argument
            self.project.run("python manage.py shell", stdin=block.text)

    def sh_block(self, block: Block) -> None:
        lines = [line.strip() for line in block.text.splitlines() if line.strip()]
        if lines[0].startswith("# from a checkout"):
            self.install(self.setup.extras, lines[1:])
            return
        if lines[0].startswith("# once published"):
            assert lines[1:] == [PUBLISHED], lines
            return
        for command in lines:
            if command.startswith("#"):
                continue
            if self.deferring and not CELERY.match(command):
                self.later.append(command)  # after the schedule ran: run_later
            else:
                self.command(command)

    def install(self, extras: str, lines: list[str] | None = None) -> None:
        """The checkout block as one script, with the clone's path for ``CHECKOUT``.

        Its ``make -C "$CHECKOUT" dist`` is the one line not run here: the test's ``dist``
        fixture ran that target once, into ``CHECKOUT/dist``, for every project."""
        if lines is None:
            lines = self.checkout_lines
        self.checkout_lines = lines
        assert MAKE_DIST in lines, lines
        script = ["set -e"]
        for line in lines:
            if line.startswith("CHECKOUT="):
                script.append(f"CHECKOUT={shlex.quote(str(self.checkout))}")
            elif line != MAKE_DIST:
                assert "[redis]" in line or not line.startswith("pip"), line
                script.append(line.replace("[redis]", f"[{extras}]" if extras else ""))
        self.project.run("\n".join(script))

    def command(self, command: str) -> None:
        if CELERY.match(command):
            self.project.start(command, command.split()[3])
            self.deferring = True
        elif command == "python manage.py createsuperuser":
            self.project.run(f"{command} --noinput")  # the answers come from DJANGO_SUPERUSER_*
        elif command == "python manage.py runserver":
            self.project.start(f"{command} 127.0.0.1:{self.port}", "runserver")  # a free port
        else:
            done = self.project.run(command)
            if command == "python manage.py check":
                assert "System check identified no issues" in done.stdout, done.stderr

    def run_later(self) -> dict[str, str]:
        """The commands after the services started; their output by command."""
        outputs = {}
        self.deferring = False
        for command in self.later:
            if command.startswith(("python manage.py createsuperuser", "python manage.py run")):
                self.command(command)
            else:
                outputs[command] = self.project.run(command).stdout
        return outputs


def superuser_env() -> dict[str, str]:
    return {f"DJANGO_SUPERUSER_{key.upper()}": value for key, value in SUPERUSER.items()}


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(1)
    raise AssertionError(f"{what} within {timeout} s")
