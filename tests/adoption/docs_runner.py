"""The manual run as written: every runnable block of README.md and docs/*.md, in page order,
literally, in a new user's project (issue 35, "docs run as written").

The project is the one docs/install.md makes (its blocks, run by ``install_page``), in a fresh
virtualenv with the wheel of ``make dist``, on SQLite or PostgreSQL, at today's real date. Each
page then starts from a copy of that project (its folder and a copy of its database): no hidden
setup, no pinned clock, only what the page itself creates. A page that needs another page's
objects must say so in words and repeat the steps.

The convention, for writers (every marker is an HTML comment, which MkDocs does not render, on
the line right before the fence):

- Runnable blocks are ```` ```python ````, ```` ```pycon ````, ```` ```console ```` and
  ```` ```sh ```` / ```` ```bash ````. ``text``, ``json``, ``yaml`` and fence-less blocks are
  never run.
- A ``python`` block whose first line is ``# file: PATH`` is that file of the project (written,
  replacing it); ``# append to: PATH`` is added at its end. A suffix ``(PostgreSQL only)`` or
  ``(SQLite only)`` limits the directive to that database, as in install.md (a reader on the
  other one skips the block). Any other ``python`` block, and every ``pycon`` session (its
  shown output must match, ``...`` for any text), runs in the
  page's ``python manage.py shell``: one session per page, so a block can use what an earlier
  one defined, as a reader's shell would. Writing a file restarts the session (a reader opens
  a new shell to load the changed code); the database keeps what the page made.
- ``<!-- output -->`` before a block: what the block before it printed (``...`` matches any
  text; a ``python`` block's output must match it).
- ``<!-- illustration -->`` before a block: a shape, a fragment or an excerpt, not a step.
- ``<!-- in a checkout -->`` before a block: commands for a clone of this repository
  (``make demo``, ``make test``, ``make bench``, its pytest files, its services), not for a
  user's project.
- ``sh`` / ``bash``: one command a line (``#`` starts a comment). ``console``: ``$ COMMAND``
  lines, each followed by its documented output: ``schedule_preview``'s must match
  (``...`` for any text), another command's last line must have the shape of the documented
  last line (its numbers may differ), and a documented ``CommandError: ...`` line is the error
  the command must end with.
- ``pip install "django-durable-scheduler[EXTRAS]"`` installs the wheel with those extras (the
  distribution has no release on the package index yet, as install.md says); the packages a
  page installed are uninstalled after it. A ``pip install`` restarts the page's shell, as
  writing a file does: a Python that is running does not see the packages added after it
  started, so a page says "in a new shell" after one.
- The long-running commands (``celery -A P worker|beat``, ``manage.py run_scheduler``,
  ``run_event_deliveries``, ``db_worker``, ``runserver``) start in the background, must still
  be running a few seconds later, and stop at the end of the page.
- ``<!-- setup`` / ``<!-- check`` comments (hidden code) are refused: a reader cannot see them.

Pages not run here: install.md is the project itself (``make test-adoption``'s fresh-venv
test runs it with its worker, beat and admin); django-tasks.md makes another project, without
Celery (``test_fresh_venv_djtasks.py``).
"""

from __future__ import annotations

import contextlib
import doctest
import json
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from tests.adoption.install_page import CELERY, REPO, PageRunner, Project

SESSION = Path(__file__).with_name("docs_session.py")
ANSWER = '{"output": '
"""How the session's answer lines start (``json.dumps`` of ``{"output", "error"}``)."""
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
NOT_RUN = {"install.md", "django-tasks.md"}
RUNNABLE = {"python", "pycon", "console", "sh", "bash"}
MARKERS = {"output", "illustration", "in a checkout"}
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*(?P<name>[\w ]+?)\s*-->\s*$")
HIDDEN = re.compile(r"^\s*<!--\s*(setup|check)\b")
FILE = re.compile(r"#\s*(file|append to):\s*(\S+)(?:\s+\((.+) only\))?\s*$")
OWN_WHEEL = re.compile(r'^pip install "?django-durable-scheduler\[([\w,]*)\]"?$')
SERVICE = re.compile(
    r"(celery -A \w+ (worker|beat)\b"
    r"|python manage.py (run_scheduler|run_event_deliveries|db_worker|runserver)\b)"
)
SERVICE_GRACE = 6.0
"""Seconds a long-running command must stay up: past its start-up checks."""


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # 1-based, the first line of code
    language: str
    code: str
    marker: str | None  # output | illustration | in a checkout | None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def runnable(self) -> bool:
        return self.language in RUNNABLE and self.marker is None


def page_blocks(path: Path) -> list[Block]:
    """The fenced blocks of a page, in order, each with the marker on the line before it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found, index, marker = [], 0, None
    while index < len(lines):
        line = lines[index]
        assert not HIDDEN.match(line), f"{path.name}:{index + 1}: hidden code a reader cannot see"
        named = MARKER.match(line)
        fence = FENCE.match(line)
        if named and named["name"] in MARKERS:
            marker = named["name"]
        elif fence:
            end = index + 1
            while not lines[end].strip().startswith("```"):
                end += 1
            indent = fence["indent"]
            body = [text.removeprefix(indent) for text in lines[index + 1 : end]]
            found.append(Block(path.name, index + 2, fence["lang"], "\n".join(body), marker))
            marker, index = None, end
        elif line.strip():
            marker = None
        index += 1
    return found


@dataclass
class Outcome:
    block: Block
    error: str | None = None  # None: passed


@dataclass
class Session:
    """The page's ``python manage.py shell``: one namespace for the page's blocks."""

    project: Project
    process: subprocess.Popen[str] | None = None
    log: TextIO | None = None

    def run(self, block: Block, kind: str) -> tuple[str, str | None]:
        if self.process is None:
            self.log = (self.project.logs / "shell.log").open("a")
            self.process = subprocess.Popen(
                ["python", "manage.py", "shell", "-c", SESSION.read_text()],
                cwd=self.project.root,
                env=self.project.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.log,
                text=True,
            )
        assert self.process.stdin and self.process.stdout
        request = {"kind": kind, "code": block.code, "path": block.page, "line": block.line}
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:  # the shell died after the last block
            answer = ""
        else:
            answer = self.process.stdout.readline()
        while answer and not answer.startswith(ANSWER):
            # What the shell printed before the session's code ran ("16 objects imported
            # automatically", Django 5.2+): the reader sees it too; not an answer.
            answer = self.process.stdout.readline()
        if not answer:
            self.close()
            shell_log = (self.project.logs / "shell.log").read_text()[-3000:]
            return "", f"the shell exited:\n{shell_log}"
        reply = json.loads(answer)
        return reply["output"], reply["error"]

    def close(self) -> None:
        if self.process is not None:
            assert self.process.stdin and self.process.stdout
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
            self.process.wait(30)
            self.process.stdout.close()
            self.process = None
        if self.log is not None:
            self.log.close()
            self.log = None


def matches(documented: str, actual: str) -> bool:
    """Doctest's comparison: exact but for ``...``, which stands for any text."""
    checker = doctest.OutputChecker()
    return checker.check_output(documented.strip() + "\n", actual.strip() + "\n", doctest.ELLIPSIS)


@dataclass
class PageRun:
    """One page in its own copy of the project."""

    project: Project
    wheel_install: PageRunner
    session: Session = field(init=False)
    installed: bool = False
    printed: str | None = None  # what the last python block printed

    def __post_init__(self) -> None:
        self.session = Session(self.project)

    def follow(self, blocks: list[Block]) -> list[Outcome]:
        outcomes = []
        try:
            for block in blocks:
                if block.marker == "output":
                    outcomes.append(Outcome(block, self.check_output(block)))
                    self.printed = None
                elif block.runnable:
                    outcomes.append(Outcome(block, self.run(block)))
        finally:
            self.session.close()
            self.project.stop()
        return outcomes

    def check_output(self, block: Block) -> str | None:
        if self.printed is None or matches(block.code, self.printed):
            return None
        return f"printed:\n{self.printed}\nthe page shows:\n{block.code}"

    def run(self, block: Block) -> str | None:
        self.printed = None
        if block.language == "python":
            directive = FILE.match(block.code.splitlines()[0] if block.code else "")
            if directive:
                if self.wheel_install.setup.wants(directive[3]):
                    self.write_file(directive[1], directive[2], block.code)
                return None
        if block.language in ("python", "pycon"):
            output, error = self.session.run(block, block.language)
            # A failed block's output is not compared: its error is the one reported.
            self.printed = output if block.language == "python" and not error else None
            return f"{error}{output[-2000:]}" if error else None
        if block.language == "console":
            return self.console(block)
        for command in commands(block.code):
            if error := self.command(command):
                return error
        return None

    def write_file(self, kind: str, path: str, code: str) -> None:
        target = self.project.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if kind == "file":
            target.write_text(code + "\n")
        else:
            with target.open("a") as file:
                file.write("\n" + code + "\n")
        self.session.close()

    def console(self, block: Block) -> str | None:
        runs: list[tuple[str, list[str]]] = []
        for line in block.code.splitlines():
            if line.startswith("$ "):
                runs.append((line[2:], []))
            elif runs:
                runs[-1][1].append(line.rstrip())
            else:
                return f"a console block must start with a `$ ` command: {line!r}"
        for command, documented in runs:
            if error := self.command(command, documented):
                return f"`{command}`: {error}"
        return None

    def command(self, command: str, documented: list[str] | None = None) -> str | None:
        words = shlex.split(command, comments=True)
        literal = shlex.join(words)
        own = OWN_WHEEL.match(literal)
        if own:
            self.installed = True
            self.session.close()  # a running Python does not see what pip adds after it
            self.wheel_install.install(own[1])
            return None
        if SERVICE.match(literal):
            return self.service(literal)
        if words[:2] == ["pip", "install"]:
            self.installed = True
            self.session.close()
        done = subprocess.run(
            command,
            shell=True,
            cwd=self.project.root,
            env=self.project.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        return judge(words, done, documented)

    def service(self, command: str) -> str | None:
        name = f"service{len(self.project.services)}"
        self.project.start(command, name)
        time.sleep(SERVICE_GRACE)
        process = self.project.services[name].process
        if process.poll() is not None:
            return f"`{command}` exited:\n{self.project.log(name)[-3000:]}"
        return None


def commands(code: str) -> list[str]:
    """An ``sh`` block's commands: one a line, ``\\`` continues one, comments left out."""
    joined = code.replace("\\\n", " ")
    return [line for line in joined.splitlines() if shlex.split(line, comments=True)]


def judge(
    words: list[str], done: subprocess.CompletedProcess[str], documented: list[str] | None
) -> str | None:
    """A command's result against the page: success, or the documented error; its output."""
    shown = [line for line in documented or [] if line.strip()]
    shown_error = [line for line in shown if line.startswith("CommandError:")]
    if shown_error:
        if done.returncode == 0 or shown_error[0] not in done.stderr:
            return f"expected {shown_error[0]!r}; got:\n{done.stdout[-1500:]}{done.stderr[-1500:]}"
        return None
    if done.returncode != 0:
        return f"failed ({done.returncode}):\n{done.stdout[-1500:]}{done.stderr[-2500:]}"
    if not shown:
        return None
    actual = done.stdout.rstrip("\n")
    if words[2:3] == ["schedule_preview"]:
        expected = "\n".join(documented or []).strip("\n")  # its blank lines too
        return (
            None
            if matches(expected, actual)
            else f"printed:\n{actual}\nthe page shows:\n{expected}"
        )
    last = actual.splitlines()[-1].rstrip() if actual else ""
    shape = re.sub(r"\d+", r"\\d+", re.escape(shown[-1]))
    return (
        None if re.fullmatch(shape, last) else f"last line {last!r}, the page shows {shown[-1]!r}"
    )


class InstallPage(PageRunner):
    """install.md's blocks without its long-running commands (the fresh-venv test runs those)."""

    def command(self, command: str) -> None:
        if CELERY.match(command) or command == "python manage.py runserver":
            return
        super().command(command)


def copy_project(base: Project, root: Path, env: dict[str, str]) -> Project:
    """The page's own project: a copy of install.md's folder (and so of its SQLite file)."""
    shutil.copytree(base.root, root / "site")
    logs = root / "logs"
    logs.mkdir()
    return Project(root / "site", base.venv, env, logs)


def installed_packages(project: Project) -> set[str]:
    listed = project.run("python -m pip list --format=freeze").stdout
    return {line.split("==")[0].lower() for line in listed.splitlines() if "==" in line}
