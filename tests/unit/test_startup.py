"""Start-up says what it will do (issue 35): which process is starting, the one-line refusal
of a bad ``@scheduled``, the scheduler a beat runs (W004), all without starting Celery."""

from __future__ import annotations

import io
import sys

import pytest
from django.core import checks

from scheduler_app.checks import startup
from scheduler_app.checks.beat import (
    beat_scheduler_messages,
    beat_scheduler_warnings,
    names_ours,
    scheduler_name,
)
from scheduler_app.checks.startup import RefusedToStart

OURS = "scheduler_app.beat:DurableScheduler"
DEFAULT = "celery.beat:PersistentScheduler"


@pytest.mark.parametrize(
    ("argv", "process"),
    [
        (["/venv/bin/celery", "-A", "project", "worker", "-l", "INFO"], "worker"),
        (["/venv/bin/celery", "-A", "project", "beat", "-S", OURS], "beat"),
        (["/venv/bin/celery", "--app=project", "worker", "-B"], "worker"),
        (["/usr/lib/python3/site-packages/celery/__main__.py", "-A", "p", "beat"], "beat"),
        (["/venv/bin/celery", "-A", "beat", "worker"], "worker"),  # an app named beat
        (["/venv/bin/celery", "-A", "project", "inspect", "registered"], None),
        (["/venv/bin/celery", "-A", "project", "call", "beat"], None),
        (["manage.py", "check"], None),
        (["/venv/bin/pytest", "worker"], None),
        ([], None),
    ],
)
def test_the_starting_process_is_read_from_the_command_line(
    argv: list[str], process: str | None
) -> None:
    assert startup.starting_process(argv) == process


@pytest.mark.parametrize(
    ("argv", "wanted"),
    [
        (["celery", "worker", "-l", "DEBUG"], True),
        (["celery", "worker", "--loglevel=debug"], True),
        (["celery", "worker", "--loglevel", "Debug"], True),
        (["celery", "worker", "-ldebug"], True),
        (["celery", "worker", "-l", "INFO"], False),
        (["celery", "worker", "--logfile=/var/log/debug"], False),
        (["celery", "worker"], False),
    ],
)
def test_the_traceback_is_shown_only_when_debug_is_asked(argv: list[str], wanted: bool) -> None:
    assert startup.debug_requested(argv) is wanted


def bad_declaration() -> ValueError:
    try:
        raise ValueError("unknown time zone 'Mars/Olympus_Mons'")
    except ValueError as exc:
        return exc


def test_a_refused_import_is_one_line_on_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "__stderr__", stderr)
    monkeypatch.setattr(sys, "argv", ["celery", "-A", "project", "worker", "-l", "INFO"])
    error = checks.Error("invalid @scheduled", hint="fix it", id="scheduler_app.E004")
    with pytest.raises(RefusedToStart) as refused:
        startup.refuse_to_import("worker", error, bad_declaration())
    assert refused.value.code == 1
    line = "the worker refuses to start: scheduler_app.E004: invalid @scheduled -- fix: fix it"
    assert stderr.getvalue() == line + "\n"
    assert str(refused.value) == line


def test_a_refused_import_shows_the_traceback_with_debug(monkeypatch: pytest.MonkeyPatch) -> None:
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "__stderr__", stderr)
    monkeypatch.setattr(sys, "argv", ["celery", "-A", "project", "beat", "-l", "DEBUG"])
    error = checks.Error("invalid @scheduled", id="scheduler_app.E004")
    with pytest.raises(RefusedToStart):
        startup.refuse_to_import("beat", error, bad_declaration())
    text = stderr.getvalue()
    assert text.startswith("Traceback") and "Mars/Olympus_Mons" in text
    assert (
        text.splitlines()[-1] == "the beat refuses to start: scheduler_app.E004: invalid @scheduled"
    )


class Sender:
    scheduler_cls = "django_celery_beat.schedulers:DatabaseScheduler"


def test_the_beat_remembers_the_scheduler_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CELERY_SKIP_CHECKS", "1")
    monkeypatch.setattr(startup, "_beat_schedulers", [])
    assert startup.running_beat_scheduler() is None
    startup.check_beat(sender=Sender())
    assert startup.running_beat_scheduler() == Sender.scheduler_cls


def test_a_scheduler_outside_a_celery_beat_runs_no_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    monkeypatch.setattr(startup, "check_process", lambda process, sender: ran.append(process))
    monkeypatch.setattr(startup, "_checked", set())
    startup.check_starting_beat(object())  # pytest's argv: not a beat
    assert ran == []
    monkeypatch.setattr(sys, "argv", ["celery", "-A", "project", "beat"])
    monkeypatch.setattr(startup, "_beat_schedulers", [])
    startup.check_starting_beat(object())
    startup.check_starting_beat(object())
    startup.check_beat(sender=Sender())  # Celery's beat_init, after "ready": not again
    assert ran == ["beat"] and startup.running_beat_scheduler() is object


def test_w004_names_a_beat_that_is_not_ours() -> None:
    (warning,) = beat_scheduler_warnings(OURS, Sender.scheduler_cls, "2 active schedule(s)")
    assert warning.id == "scheduler_app.W004" and warning.level == checks.WARNING
    assert "this beat runs 'django_celery_beat.schedulers:DatabaseScheduler'" in warning.msg
    assert "2 active schedule(s) hand off to Celery: none of them will run" in warning.msg
    assert f"-S {OURS}" in warning.hint and f'CELERY_BEAT_SCHEDULER = "{OURS}"' in warning.hint


def test_w004_when_the_setting_is_celerys_default() -> None:
    (warning,) = beat_scheduler_warnings(DEFAULT, None, "1 @scheduled declaration(s)")
    assert warning.msg.startswith("CELERY_BEAT_SCHEDULER is not set")
    assert "a beat started without -S scheduler_app.beat:DurableScheduler" in warning.msg


@pytest.mark.parametrize(
    ("configured", "running", "waiting"),
    [
        (DEFAULT, None, ""),  # nothing to run
        (OURS, None, "3 active schedule(s)"),  # the setting is ours
        (DEFAULT, OURS, "3 active schedule(s)"),  # started with -S ours
        (DEFAULT, "scheduler_app.beat.DurableScheduler", "3 active schedule(s)"),
    ],
)
def test_no_w004_when_a_beat_of_ours_would_run_them(
    configured: str, running: str | None, waiting: str
) -> None:
    assert beat_scheduler_warnings(configured, running, waiting) == []


def test_another_scheduler_in_the_setting_is_e002_not_also_w004() -> None:
    other = "django_celery_beat.schedulers:DatabaseScheduler"
    (error,) = beat_scheduler_messages(other, None, "1 active schedule(s)", active=1)
    assert error.id == "scheduler_app.E002"
    assert beat_scheduler_messages(other, OURS, "1 active schedule(s)", active=1) == []


def test_scheduler_classes_are_told_by_name() -> None:
    class Durable:
        pass

    Durable.__module__, Durable.__qualname__ = "scheduler_app.beat", "DurableScheduler"

    class Mine(Durable):
        pass

    assert names_ours(Durable) and names_ours(Mine) and names_ours(OURS)
    assert not names_ours(DEFAULT) and not names_ours(None)
    assert scheduler_name(Durable) == "scheduler_app.beat.DurableScheduler"
