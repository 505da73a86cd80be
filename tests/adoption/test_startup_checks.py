"""Issue 21: the system checks also run when a beat or a worker starts; an Error refuses to
start, one line per error with its fix."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core import checks

from scheduler_app.checks.startup import RefusedToStart, refuse_on_errors, startup_problems

REPO = Path(__file__).resolve().parents[2]


def test_an_error_refuses_to_start_with_the_fix_on_its_line() -> None:
    error = checks.Error("task 'x' is wrong", hint="make it right", id="scheduler_app.E001")
    warning = checks.Warning("slow", hint="hurry", id="scheduler_app.W002")
    with pytest.raises(RefusedToStart) as refused:
        refuse_on_errors("worker", [warning, error])
    assert isinstance(refused.value, SystemExit)  # Celery swallows Exceptions from receivers
    assert refused.value.code == 1
    text = str(refused.value)
    assert text.splitlines()[0].startswith("the worker refuses to start: 1 system check error")
    assert text.splitlines()[1] == "scheduler_app.E001: task 'x' is wrong -- fix: make it right"


def test_warnings_are_logged_and_the_process_starts(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "scheduler_app.startup")
    warning = checks.Warning("slow", hint="hurry", id="scheduler_app.W002")
    refuse_on_errors("beat", [warning])
    assert [r.getMessage() for r in caplog.records] == ["scheduler_app.W002: slow -- fix: hurry"]


@pytest.mark.django_db
def test_the_example_project_starts() -> None:
    assert [p for p in startup_problems() if p.level >= checks.ERROR] == []


def start(tmp_path: Path, *command: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_SKIP_CHECKS")}
    env["PROJECT_VAR_DIR"] = str(tmp_path)
    celery = [sys.executable, "-m", "celery", "-A", "tests.adoption.plain_celery"]
    return subprocess.run(
        celery + list(command), cwd=REPO, env=env, capture_output=True, text=True, timeout=30
    )


def assert_refused(done: subprocess.CompletedProcess[str], process: str) -> None:
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-3000:]
    assert f"the {process} refuses to start" in done.stderr, done.stderr[-3000:]
    (line,) = [x for x in done.stderr.splitlines() if "'adoption.plain_report'" in x]
    assert line.startswith("scheduler_app.E001: task 'adoption.plain_report'")
    assert 'fix: create the Celery app with Celery(..., task_cls="scheduler_app.tasks' in line


@pytest.mark.slow
def test_a_worker_without_task_cls_refuses_to_start(tmp_path: Path) -> None:
    done = start(tmp_path, "worker", "--pool=solo", "--without-gossip", "--without-mingle")
    assert_refused(done, "worker")


@pytest.mark.slow
def test_a_beat_without_task_cls_refuses_to_start(tmp_path: Path) -> None:
    # Celery's own scheduler: the beat's checks run whichever scheduler it is given.
    schedule = f"--schedule={tmp_path / 'schedule'}"
    done = start(tmp_path, "beat", "-S", "celery.beat:PersistentScheduler", schedule)
    assert_refused(done, "beat")
