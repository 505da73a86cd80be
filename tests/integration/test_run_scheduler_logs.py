"""``manage.py run_scheduler`` says what it does (issue 35): each sync and each tick that
creates or hands off work at INFO, and a warning naming the likely cause when the sync finds
no declarations (the app holding tasks.py not in INSTALLED_APPS)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from io import StringIO

import pytest
from django.core.management import call_command

from project.celery import app as celery_app
from scheduler_app import loop as scheduler_loop
from scheduler_app.authoring.declarations import ScheduleRegistry, isolated_registry, scheduled
from scheduler_app.authoring.sync import sync_schedules
from scheduler_app.clock import FakeClock
from scheduler_app.handoff import djtasks_registry
from scheduler_app.loop import SchedulerLoop
from scheduler_app.management.commands.run_scheduler import show_logs
from tests.integration import djtasks_support as support
from tests.integration.support import START

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def declared(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScheduleRegistry]:
    """An empty registry the loop's sync reads without importing the task modules again
    (that makes Celery's Django fix-up run ``django.setup()``, whose logging configuration
    takes ``caplog``'s handler off the root logger)."""
    celery_app.loader.import_default_modules()  # before isolating: see isolated_registry()
    # A django.tasks task decorated here stays marked schedulable after the registry is
    # restored (the mark is the allowlist's, not the registry's): the test's own copy of the
    # marks keeps it from other tests (test_djtasks_target's allowlist test failed after it).
    monkeypatch.setattr(djtasks_registry, "_marked", set(djtasks_registry.marked()))
    with isolated_registry() as fresh:
        monkeypatch.setattr(
            scheduler_loop, "sync_schedules", lambda: sync_schedules(declarations=fresh)
        )
        yield fresh


def actions(caplog: pytest.LogCaptureFixture) -> dict[str, logging.LogRecord]:
    return {getattr(r, "action", ""): r for r in caplog.records if r.name.startswith("scheduler")}


def test_a_tick_that_hands_off_work_is_logged_at_info(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "scheduler_app")
    clock = FakeClock(START)
    support.schedule(clock, rule="60")
    loop = support.loop(clock)
    loop.tick()
    tick = actions(caplog)["run_scheduler.tick"]
    assert tick.levelno == logging.INFO
    assert tick.getMessage().startswith("tick: 1 created, 1 handed off")
    assert (tick.occurrences_created, tick.published) == (1, 1)  # type: ignore[attr-defined]
    caplog.clear()
    loop.tick()  # nothing due: no line
    assert "run_scheduler.tick" not in actions(caplog)


def test_a_sync_is_logged_at_info(
    declared: ScheduleRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "scheduler_app")
    scheduled(every="15m")(support.ping)
    assert support.loop(FakeClock(START)).start(sync=True) == []
    synced = actions(caplog)["run_scheduler.synced"]
    assert synced.levelno == logging.INFO
    assert synced.getMessage().startswith("synced 1 @scheduled declaration(s): 1 created")
    assert "run_scheduler.no_declarations" not in actions(caplog)


def test_no_declarations_is_a_warning_that_names_installed_apps(
    declared: ScheduleRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "scheduler_app")
    support.loop(FakeClock(START)).start(sync=True)
    warning = actions(caplog)["run_scheduler.no_declarations"]
    assert warning.levelno == logging.WARNING
    text = warning.getMessage()
    assert text.startswith("no @scheduled declarations found (0 active django.tasks schedule(s)")
    assert "is the app that holds tasks.py in INSTALLED_APPS?" in text


def test_the_command_logs_its_sync_and_ticks(
    declared: ScheduleRegistry,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.INFO, "scheduler_app")
    monkeypatch.setattr(SchedulerLoop, "install_signals", lambda self: None)  # pytest's own
    out = StringIO()
    call_command("run_scheduler", "--max-ticks", "1", "--owner", "t", stdout=out)
    assert "run_scheduler started (owner t)" in out.getvalue()
    assert {"run_scheduler.synced", "run_scheduler.no_declarations"} <= set(actions(caplog))


@pytest.mark.parametrize(
    ("verbosity", "level"), [(0, logging.WARNING), (1, logging.INFO), (2, logging.DEBUG)]
)
def test_without_logging_settings_the_command_prints_the_lines(verbosity: int, level: int) -> None:
    bare = logging.Logger("scheduler_app")  # no parent: what a new project's logger sees
    show_logs(verbosity, bare)
    (handler,) = bare.handlers
    assert bare.level == level and isinstance(handler, logging.StreamHandler)
    show_logs(verbosity, bare)
    assert len(bare.handlers) == 1


def test_a_project_logging_configuration_is_left_alone() -> None:
    configured = logging.Logger("scheduler_app")
    configured.addHandler(logging.NullHandler())
    show_logs(2, configured)
    assert len(configured.handlers) == 1 and configured.level == logging.NOTSET
