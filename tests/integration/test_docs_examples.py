"""The code examples of the manual (``docs/*.md`` and ``README.md``) that are not yet run as
written run here.

The pages in ``AS_WRITTEN`` are run as a reader runs them, in a new project made by following
docs/install.md, at today's date and without hidden blocks, by
``tests/adoption/test_docs_as_written.py`` (``make test-adoption``); their blocks write the
project's files (``# file:``) and need that project, so they are left out of the example run
here. The file-level checks below (every block collected, the reference's lists) still cover
every page.

One test per Markdown file. Its examples run **in document order, in one namespace per
file**, so a later block can use what an earlier one defined, as a reader would:

- `````python`` blocks are executed with ``exec``. A block fenced right after a line
  ``<!-- output -->`` (any language, usually ``text``) is what the python block before it
  prints: the printed text must match it exactly.
- `````pycon`` blocks (``>>>`` sessions) are run with :mod:`doctest`: the shown output must match.
- Hidden blocks: an HTML comment whose first line is ``<!-- setup`` or ``<!-- check``
  (optionally followed by ``: what it is for``), its Python code on the following lines, and
  ``-->`` on a line of its own. MkDocs does not render them. ``setup`` provides what an
  example only names (a stub task, a stand-in HTTP client, a table); ``check`` runs the
  example for real afterwards and asserts what the text says about it.
- `````console`` blocks: each ``$ python manage.py COMMAND ARGS`` line runs through
  ``call_command`` (in a temporary working directory); the lines after it, up to the next
  ``$``, are its documented output:

  - ``schedule_preview``: the output must match exactly (the command is pure), and a
    documented ``CommandError: ...`` line must be the error raised;
  - every other command: it must succeed, and its last output line must have the documented
    last line's shape (numbers may differ: the documented run had other data).

Every namespace starts with: ``app`` (the project's Celery app, from ``project.celery``),
``clock`` (a :class:`FakeClock`), ``NOW``, ``FakeClock``, ``run_due(schedule)`` (tick a
beat at the schedule's next slot and deliver what it published to the task, in-process as a
worker would; returns the occurrences) and ``sample_context(**fields)`` (an
:class:`OccurrenceContext` for calling a task body under ``use_occurrence``). The wall clock
of the scheduler (``SystemClock.now``) is pinned to ``clock``, starting at ``NOW``
(2026-03-27 12:00 UTC, the Friday most examples talk about), so dates in examples stay in
the future and outputs do not depend on the day the suite runs. Each file runs in
``isolated_registry()`` (``@scheduled`` examples do not leak into other tests), tasks the
examples register are removed from the Celery app afterwards, and the database is rolled
back as in any ``django_db`` test.

Not executed, on purpose:

- ``sh`` blocks and ``console`` lines that are not ``python manage.py``: ``make demo`` /
  ``make test`` (build a virtualenv, run the whole suite), ``celery ... beat`` / ``worker``
  (long-running processes; tests/acceptance runs real ones), ``pg_ctlcluster`` /
  ``redis-server`` (start system services);
- ``python manage.py replay_occurrence <id>``: it needs the id of a real failed occurrence
  of your database (``tests/integration/test_retries.py`` covers the command);
- ``text``, ``json`` and fence-less blocks: output, file formats and grammar, not code.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import django
import pytest
from celery import _state as celery_state
from django.core.management import CommandError, call_command

from project.celery import app as project_app
from scheduler_app.authoring.declarations import isolated_registry
from scheduler_app.clock import FakeClock, SystemClock
from scheduler_app.conf import SchedulerSettings
from scheduler_app.context import OccurrenceContext
from scheduler_app.models import Occurrence, Schedule
from scheduler_app.ticker import Ticker
from tests.integration.support import MemoryPublisher
from tests.integration.worker_support import fetch, run

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))
FILES = [ROOT / "README.md", *DOCS]
AS_WRITTEN = {
    "README.md",
    "admin.md",
    "api.md",
    "contract.md",
    "decorator.md",
    "deployment.md",
    "events.md",
    "index.md",
    "migrating.md",
    "operations.md",
    "quick-start.md",
    "scheduling.md",
    "tasks.md",
    "timing.md",
}
"""Pages whose examples run as written (tests/adoption/test_docs_as_written.py), not here."""
RUN_HERE = [path for path in FILES if path.name not in AS_WRITTEN]
NOW = datetime(2026, 3, 27, 12, 0, tzinfo=UTC)
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)\s*$")
HIDDEN = re.compile(r"^<!--\s*(?P<kind>setup|check)\b.*$")


@dataclass(frozen=True)
class Block:
    kind: str  # python | pycon | console | hidden | output
    line: int  # 1-based line of the first line of code
    code: str


def blocks(path: Path) -> list[Block]:
    """The executable blocks of a Markdown file, in order."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    output_next = False
    while index < len(lines):
        line = lines[index]
        fence = FENCE.match(line)
        if line.strip() == "<!-- output -->":
            output_next = True
            index += 1
            continue
        if HIDDEN.match(line):
            end = lines.index("-->", index + 1)
            found.append(Block("hidden", index + 2, "\n".join(lines[index + 1 : end])))
            index = end + 1
            continue
        if fence:
            indent = fence["indent"]
            end = index + 1
            while not lines[end].strip().startswith("```"):
                end += 1
            body = [
                text[len(indent) :] if text.startswith(indent) else text
                for text in lines[index + 1 : end]
            ]
            if output_next:
                found.append(Block("output", index + 2, "\n".join(body)))
            elif fence["lang"] in ("python", "pycon", "console"):
                found.append(Block(fence["lang"], index + 2, "\n".join(body)))
            output_next = False
            index = end + 1
            continue
        index += 1
    return found


def test_every_python_block_is_collected() -> None:
    """A ```python block inside something the parser skips would silently never run."""
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        runnable = [b for b in blocks(path) if b.kind in ("python", "pycon")]
        assert len(runnable) == len(re.findall(r"^\s*```(python|pycon)\s*$", text, re.M)), path
        assert "```py\n" not in text, f"{path}: use ```python (executed) or another language"


def test_the_manual_has_examples() -> None:
    counted = {path.name: len(blocks(path)) for path in FILES}
    assert sum(counted.values()) > 30, counted


def test_the_reference_lists_every_setting_and_schedule_field() -> None:
    reference = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    for setting in fields(SchedulerSettings):
        default = setting.default
        shown = f'"{default}"' if isinstance(default, str) else str(default)
        row = f"| `SCHEDULER_{setting.name}` | `{shown}` |"
        assert row in reference, f"docs/reference.md lacks {row}"
    for field in Schedule._meta.concrete_fields:
        assert f"`{field.name}`" in reference, f"docs/reference.md lacks the field {field.name}"


def test_deployment_recommends_what_the_project_and_the_pooler_hosts_run() -> None:
    """docs/deployment.md's settings for workers, the Celery app and PgBouncer (shown there as
    illustrations) are those of the example project and of ``make test-multihost``'s hosts."""
    from django.conf import settings

    from torture.multihost import settings as hosts

    codes = [
        block.code for block in blocks(ROOT / "docs" / "deployment.md") if block.kind == "python"
    ]
    worker: dict[str, Any] = {}
    exec(next(code for code in codes if "CELERY_TASK_ACKS_LATE =" in code), worker)
    recommended = {name: value for name, value in worker.items() if name.startswith("CELERY_")}
    assert len(recommended) == 3, recommended
    for name, value in recommended.items():
        assert getattr(settings, name) == value, name
    app_line = next(code for code in codes if "task_cls=" in code)
    assert f'task_cls="{project_app.task_cls}"' in app_line
    pooled: dict[str, Any] = {}
    exec(next(code for code in codes if '"pgbouncer.internal"' in code), pooled)
    ours, theirs = pooled["DATABASES"]["default"], hosts.DATABASES["default"]
    assert theirs["DISABLE_SERVER_SIDE_CURSORS"] is ours["DISABLE_SERVER_SIDE_CURSORS"] is True
    assert theirs["OPTIONS"]["prepare_threshold"] is ours["OPTIONS"]["prepare_threshold"] is None


def test_operations_lists_every_command() -> None:
    operations = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    commands = ROOT / "scheduler_app" / "management" / "commands"
    for module in commands.glob("[!_]*.py"):
        assert f"### `{module.stem}`" in operations, module.stem


# -- running a file ------------------------------------------------------------------------


def sample_context(**fields: Any) -> OccurrenceContext:
    """An occurrence context as a worker would see it, for calling a task body directly."""
    values: dict[str, Any] = {
        "occurrence_id": "6af80117-533f-5d12-95ea-a43c37f8dd6f",
        "schedule_id": "3f0c9a57-2a55-4b7e-9a0e-4c7f3f1f2b10",
        "schedule_version": 1,
        "idempotency_key": "3f0c9a57-2a55-4b7e-9a0e-4c7f3f1f2b10:2026-03-27T08:00:00.000000Z",
        "scheduled_for": datetime(2026, 3, 27, 8, 0, tzinfo=UTC),
        "window_start": datetime(2026, 3, 26, 8, 0, tzinfo=UTC),
        "window_end": datetime(2026, 3, 27, 8, 0, tzinfo=UTC),
        "timezone": "Europe/Paris",
        "trigger": "scheduled",
        "catch_up": False,
        "objective": "",
        "deadline_at": None,
    }
    return OccurrenceContext(**{**values, **fields})


def make_run_due(clock: FakeClock) -> Any:
    def run_due(schedule: Schedule) -> list[Occurrence]:
        """Tick a beat at the schedule's next slot; run what it published for that schedule."""
        schedule.refresh_from_db()
        assert schedule.next_run_at is not None, f"{schedule} has no next run"
        clock.set(max(clock.now(), schedule.next_run_at))
        broker = MemoryPublisher()
        Ticker(broker, clock=clock, settings=SchedulerSettings(), owner="docs-beat").tick()
        mine = [row for row in broker.sent if row.schedule_id == schedule.pk]
        for row in mine:
            run(celery_state.get_current_app().tasks[row.task], fetch(row), clock)
        return [Occurrence.objects.get(pk=row.pk) for row in mine]

    return run_due


def run_console(block: Block, path: Path) -> None:
    lines = block.code.splitlines()
    commands: list[tuple[int, str, list[str]]] = []
    for offset, line in enumerate(lines):
        if line.startswith("$ "):
            commands.append((block.line + offset, line[2:], []))
        elif commands:
            commands[-1][2].append(line.rstrip())
    for lineno, command, documented in commands:
        argv = shlex.split(command, comments=True)
        if argv[:2] != ["python", "manage.py"] or argv[2] == "replay_occurrence":
            continue  # see the module docstring
        where = f"{path.name}:{lineno}: {command}"
        name, args = argv[2], argv[3:]
        out, err = io.StringIO(), io.StringIO()
        while documented and not documented[-1]:
            documented.pop()
        try:
            call_command(name, *args, stdout=out, stderr=err)
        except CommandError as exc:
            shown = [line for line in documented if line.startswith("CommandError:")]
            assert shown, f"{where}: failed: {exc}"
            assert f"CommandError: {exc}" == shown[0], where
            continue
        actual = [line.rstrip() for line in out.getvalue().rstrip("\n").splitlines()]
        if name == "schedule_preview":
            assert actual == documented, where
        elif documented:
            shape = re.escape(documented[-1])
            shape = re.sub(r"\d+", r"\\d+", shape)
            assert actual and re.fullmatch(shape, actual[-1]), (where, actual)


def run_file(path: Path, namespace: dict[str, Any]) -> None:
    printed = ""
    for block in blocks(path):
        where = f"{path}:{block.line}"
        if block.kind in ("python", "hidden"):
            code = "\n" * (block.line - 1) + block.code
            captured = io.StringIO()
            with contextlib.redirect_stdout(captured):
                exec(compile(code, str(path), "exec"), namespace)
            print(captured.getvalue(), end="")
            if block.kind == "python":
                printed = captured.getvalue()
        elif block.kind == "output":
            assert printed.rstrip("\n").splitlines() == block.code.splitlines(), where
        elif block.kind == "pycon":
            test = doctest.DocTestParser().get_doctest(
                block.code, namespace, where, str(path), block.line - 1
            )
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
            runner.run(test, clear_globs=False)
            assert not runner.failures, f"{where}: doctest failed (output above)"
        else:
            run_console(block, path)


@pytest.fixture
def docs_namespace(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[tuple[dict[str, Any], FakeClock]]:
    clock = FakeClock(NOW)
    monkeypatch.setattr(SystemClock, "now", lambda self: clock.now())
    monkeypatch.chdir(tmp_path)
    project_app.loader.import_default_modules()  # before isolated_registry (see its docstring)
    tasks_before = set(project_app.tasks.keys())
    beat_schedule = project_app.conf.beat_schedule
    namespace: dict[str, Any] = {
        "app": project_app,
        "clock": clock,
        "NOW": NOW,
        "FakeClock": FakeClock,
        "run_due": make_run_due(clock),
        "sample_context": sample_context,
    }
    try:
        with isolated_registry():
            yield namespace, clock
    finally:
        project_app.set_current()  # an example may build another Celery app
        project_app.conf.beat_schedule = beat_schedule
        for name in set(project_app.tasks.keys()) - tasks_before:
            project_app.tasks.pop(name)


NEEDS_DJANGO_TASKS = pytest.mark.skipif(
    django.VERSION < (5, 2), reason="django-tasks-db needs Django 5.2+ (the matrix's older ends)"
)
"""docs/django-tasks.md runs its examples against django-tasks-db, which Django < 5.2 lacks."""


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(path, marks=NEEDS_DJANGO_TASKS) if path.name == "django-tasks.md" else path
        for path in RUN_HERE
    ],
    ids=[path.name for path in RUN_HERE],
)
@pytest.mark.django_db
def test_examples(path: Path, docs_namespace: tuple[dict[str, Any], FakeClock]) -> None:
    namespace, _clock = docs_namespace
    namespace["__name__"] = f"docs_examples.{path.stem}"
    run_file(path, namespace)
