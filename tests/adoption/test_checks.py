"""System checks of issues 13 and 21: loud misconfiguration with stable ids and the fix in the
hint."""

from __future__ import annotations

from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from django.core import mail
from django.core.checks import Error
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from project.celery import app as project_app
from scheduler_app import checks as checks_module
from scheduler_app import services
from scheduler_app.checks import (
    acks_late_warnings,
    celery_configuration,
    celery_database_configuration,
    secret_key,
    secret_key_errors,
    startup,
    stored_targets,
    task_class_errors,
)
from scheduler_app.checks.beat import beat_scheduler_errors
from scheduler_app.declarations import isolated_registry, scheduled
from scheduler_app.tasks import OccurrenceTask

pytestmark = pytest.mark.filterwarnings("ignore::celery.exceptions.DuplicateTaskNameWarning")


def ours(messages: list) -> list:
    """Messages about this module's tasks (shared tasks of the example project register on
    every app, so a plain app has plain copies of them too)."""
    return [m for m in messages if "'adoption." in m.msg]


@pytest.fixture
def plain_app() -> Iterator[Celery]:
    """A Celery app made the usual way, without ``task_cls``: the silent failure.

    Finalizing a new app registers every ``@shared_task`` this process has seen, including
    other tests' same-named ones: Celery's duplicate-name warning is theirs, not ours."""
    app = Celery("plain", set_as_current=False)
    yield app
    project_app.set_current()


def test_a_schedulable_task_without_occurrence_task_is_an_error(plain_app: Celery) -> None:
    @plain_app.task(name="adoption.plain_report", schedulable=True, shared=False)
    def plain_report() -> None: ...

    (error,) = ours(task_class_errors(plain_app))
    assert isinstance(error, Error)
    assert error.id == "scheduler_app.E001"
    assert "'adoption.plain_report'" in error.msg and "'overlap'" in error.msg
    assert 'task_cls="scheduler_app.tasks:OccurrenceTask"' in error.hint


def test_a_stored_target_without_occurrence_task_is_an_error(plain_app: Celery) -> None:
    @plain_app.task(name="adoption.unmarked", shared=False)
    def unmarked() -> None: ...

    assert ours(task_class_errors(plain_app)) == []  # nothing targets it: not an error
    (error,) = ours(task_class_errors(plain_app, {"adoption.unmarked": 2}))
    assert isinstance(error, Error) and error.id == "scheduler_app.E005"
    assert error.msg.startswith("2 schedule(s) target task 'adoption.unmarked'")
    assert "task_cls removed" in error.msg
    assert 'task_cls="scheduler_app.tasks:OccurrenceTask"' in error.hint


@pytest.mark.django_db
def test_task_cls_removed_after_schedules_exist_is_an_error(plain_app: Celery) -> None:
    """Issue 21: the example project's app made again without task_cls, a schedule stored:
    the check that may use the database names the schedule's task (E005)."""
    services.create_schedule(task="demo.ping", kind="cron", rule="0 9 * * *", timezone="UTC")
    plain_app.set_current()
    messages = celery_database_configuration(databases=["default"])
    (error,) = [m for m in messages if "'demo.ping'" in m.msg]
    assert error.id == "scheduler_app.E005" and error.msg.startswith("1 schedule(s)")
    with pytest.raises(SystemCheckError, match=r"scheduler_app.E005\) 1 schedule"):
        call_command("check", databases=["default"])


def test_an_invalid_declaration_is_an_error(
    plain_app: Celery, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21: an unknown zone in @scheduled stops the worker and the beat, so
    `manage.py check` fails on it too (it was the Warning W003), naming the line."""

    def import_tasks_module() -> None:
        scheduled(cron="0 9 * * *", timezone="Mars/Olympus_Mons")  # the module's bad line

    monkeypatch.setattr(plain_app.loader, "import_default_modules", import_tasks_module)
    (error,) = task_class_errors(plain_app)
    assert isinstance(error, Error) and error.id == "scheduler_app.E004"
    assert "Mars/Olympus_Mons" in error.msg
    assert f"{__file__}:" in error.msg  # where the declaration is, not where it was checked
    assert "docs/decorator.md" in error.hint
    plain_app.set_current()
    with pytest.raises(SystemCheckError, match=r"scheduler_app.E004\) invalid @scheduled"):
        call_command("check")


def test_task_modules_that_cannot_be_imported_are_an_error(
    plain_app: Celery, monkeypatch: pytest.MonkeyPatch
) -> None:
    def import_tasks_module() -> None:
        raise ModuleNotFoundError("No module named 'reports.helpers'")

    monkeypatch.setattr(plain_app.loader, "import_default_modules", import_tasks_module)
    (error,) = task_class_errors(plain_app)
    assert isinstance(error, Error) and error.id == "scheduler_app.E006"
    assert "reports.helpers" in error.msg


def test_occurrence_task_and_its_subclasses_pass(plain_app: Celery) -> None:
    class Audited(OccurrenceTask):
        pass

    @plain_app.task(name="adoption.base", base=OccurrenceTask, schedulable=True, shared=False)
    def with_base() -> None: ...

    @plain_app.task(name="adoption.sub", base=Audited, schedulable=True, shared=False)
    def with_subclass() -> None: ...

    assert ours(task_class_errors(plain_app, {"adoption.base", "adoption.sub"})) == []


def test_manage_py_check_fails_for_a_wrong_task_class(plain_app: Celery) -> None:
    @plain_app.task(name="adoption.wrong", schedulable=True, shared=False)
    def wrong() -> None: ...

    plain_app.set_current()
    with pytest.raises(SystemCheckError, match=r"scheduler_app.E001\) task 'adoption.wrong'"):
        call_command("check")


@pytest.mark.django_db
def test_targets_of_stored_schedules_are_read_from_the_database() -> None:
    services.create_schedule(task="demo.ping", kind="cron", rule="0 9 * * *", timezone="UTC")
    assert "demo.ping" in stored_targets()
    assert celery_configuration(databases=["default"]) == []  # the example project is right


def test_another_beat_scheduler_while_schedules_exist_is_an_error() -> None:
    other = "django_celery_beat.schedulers:DatabaseScheduler"
    (error,) = beat_scheduler_errors(other, schedules_exist=True)
    assert error.id == "scheduler_app.E002"
    assert 'CELERY_BEAT_SCHEDULER = "scheduler_app.beat:DurableScheduler"' in error.hint
    assert beat_scheduler_errors(other, schedules_exist=False) == []
    assert beat_scheduler_errors("scheduler_app.beat:DurableScheduler", True) == []
    assert beat_scheduler_errors("scheduler_app.beat.DurableScheduler", True) == []


def test_workers_without_acks_late_are_warned() -> None:
    (warning,) = acks_late_warnings({"task_acks_late": False, "task_reject_on_worker_lost": None})
    assert warning.id == "scheduler_app.W002"
    assert "CELERY_TASK_ACKS_LATE = True" in warning.hint
    assert "CELERY_TASK_REJECT_ON_WORKER_LOST = True" in warning.hint
    both = {"task_acks_late": True, "task_reject_on_worker_lost": True}
    assert acks_late_warnings(both) == []
    assert acks_late_warnings(project_app.conf) == []


def test_a_published_secret_key_fails_outside_debug() -> None:
    for key in ("dev-only-insecure-key-change-me", "django-insecure-abc123", ""):
        (error,) = secret_key_errors(key, debug=False)
        assert error.id == "scheduler_app.E003"
        assert "DJANGO_SECRET_KEY" in error.hint
        assert secret_key_errors(key, debug=True) == []
    assert secret_key_errors("x" * 50, debug=False) == []


def test_manage_py_check_fails_on_the_former_example_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(mail, "outbox", raising=False)  # `manage.py check`, not the test runner
    insecure = override_settings(SECRET_KEY="dev-only-insecure-key-change-me", DEBUG=False)
    with insecure, pytest.raises(SystemCheckError, match=r"scheduler_app\.E003"):
        call_command("check")
    call_command("check")  # the example project's own key passes


def test_sqlite_hint_on_django_before_5_1_says_postgresql(monkeypatch: pytest.MonkeyPatch) -> None:
    """Django 4.2 has no transaction_mode option: the only fix is another database."""
    import django

    from scheduler_app.checks import SQLITE, sqlite_warnings

    monkeypatch.setattr(django, "VERSION", (4, 2, 16, "final", 0))
    (warning,) = sqlite_warnings({"default": {"ENGINE": SQLITE, "NAME": "db.sqlite3"}})
    assert warning.id == "scheduler_app.W001"
    assert warning.hint.startswith("use PostgreSQL")


def test_check_constraints_take_the_django_5_1_keyword_on_every_supported_django() -> None:
    """The models and migrations write CheckConstraint(condition=...) (Django 5.1's name);
    scheduler_app.compat makes Django 4.2 accept it (the nox matrix runs this there)."""
    from django.db.models import CheckConstraint, Q

    constraint = CheckConstraint(condition=Q(version__gte=1), name="version_positive")
    checked = getattr(constraint, "condition", None) or constraint.check
    assert checked == Q(version__gte=1)


CELERY_DEFAULT = "celery.beat:PersistentScheduler"


def w004(stderr: StringIO) -> list[str]:
    return [line for line in stderr.getvalue().splitlines() if "scheduler_app.W004" in line]


@pytest.mark.django_db
def test_check_warns_when_the_beat_setting_is_unset_and_schedules_exist(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 35: without CELERY_BEAT_SCHEDULER Celery's beat runs nothing of ours, and
    `check` said "no issues"."""
    monkeypatch.setitem(project_app.conf, "beat_scheduler", CELERY_DEFAULT)
    monkeypatch.setattr(startup, "_beat_schedulers", [])
    project_app.loader.import_default_modules()  # before isolating: see isolated_registry()
    monkeypatch.setattr(checks_module, "celery_declarations", lambda app: 0)  # none declared
    err = StringIO()
    call_command("check", databases=["default"], stderr=err)
    assert w004(err) == []  # nothing active: nothing to warn about
    services.create_schedule(task="demo.ping", kind="cron", rule="0 9 * * *", timezone="UTC")
    call_command("check", databases=["default"], stderr=err)
    (line,) = w004(err)
    assert "CELERY_BEAT_SCHEDULER is not set" in line and "1 active schedule(s)" in line
    assert "start the beat with -S scheduler_app.beat:DurableScheduler" in err.getvalue()
    monkeypatch.setitem(project_app.conf, "beat_scheduler", "scheduler_app.beat:DurableScheduler")
    out = StringIO()
    call_command("check", databases=["default"], stderr=out)
    assert w004(out) == []


def test_check_without_the_database_warns_for_the_declarations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(project_app.conf, "beat_scheduler", CELERY_DEFAULT)
    monkeypatch.setattr(startup, "_beat_schedulers", [])
    project_app.loader.import_default_modules()  # before isolating: see isolated_registry()
    with isolated_registry():
        scheduled(cron="0 9 * * *", timezone="UTC")(project_app.tasks["demo.ping"])
        err = StringIO()
        call_command("check", stderr=err)
    assert len(w004(err)) == 1, err.getvalue()
    (line,) = w004(err)
    assert "while 1 @scheduled declaration(s) hand off to Celery" in line


@pytest.mark.django_db
def test_a_beat_started_with_another_scheduler_is_warned(monkeypatch: pytest.MonkeyPatch) -> None:
    """At beat start the scheduler it really runs (-S) is judged, not the setting."""
    services.create_schedule(task="demo.ping", kind="cron", rule="0 9 * * *", timezone="UTC")
    monkeypatch.setattr(startup, "_beat_schedulers", [CELERY_DEFAULT])
    monkeypatch.setattr(checks_module, "celery_declarations", lambda app: 0)
    (warning,) = celery_database_configuration(databases=["default"])
    assert warning.id == "scheduler_app.W004"
    assert warning.msg.startswith(f"this beat runs {CELERY_DEFAULT!r}")
    monkeypatch.setattr(startup, "_beat_schedulers", ["scheduler_app.beat:DurableScheduler"])
    assert celery_database_configuration(databases=["default"]) == []


BAD_MODULE = """\
from scheduler_app.declarations import scheduled


@scheduled(
    cron="0 9 * * *",
    timezone="Mars/Olympus_Mons",
)
def nightly_report():
    pass
"""


def test_an_invalid_declaration_names_its_task_function(
    plain_app: Celery, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    module = tmp_path / "bad_tasks.py"
    module.write_text(BAD_MODULE)

    def import_tasks_module() -> None:
        exec(compile(module.read_text(), str(module), "exec"), {})

    monkeypatch.setattr(plain_app.loader, "import_default_modules", import_tasks_module)
    (error,) = task_class_errors(plain_app)
    assert error.id == "scheduler_app.E004"
    assert error.msg.startswith("invalid @scheduled declaration on task function 'nightly_report'")
    assert f"{module}:4" in error.msg


def test_a_failing_call_in_a_function_body_names_no_task(
    plain_app: Celery, monkeypatch: pytest.MonkeyPatch
) -> None:
    def import_tasks_module() -> None:
        scheduled(cron="0 9 * * *", timezone="Mars/Olympus_Mons")

    monkeypatch.setattr(plain_app.loader, "import_default_modules", import_tasks_module)
    (error,) = task_class_errors(plain_app)
    assert error.msg.startswith("invalid @scheduled declaration at ")


def test_django_s_test_runner_turning_debug_off_is_not_a_deployment(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`manage.py test` in a project made by install.md failed on E003: Django's runner sets
    DEBUG off itself. Its test environment (mail.outbox) is not a deployment."""
    settings.SECRET_KEY = "django-insecure-" + "x" * 40
    settings.DEBUG = False
    monkeypatch.delattr(mail, "outbox", raising=False)
    assert [m.id for m in secret_key()] == ["scheduler_app.E003"]
    monkeypatch.setattr(mail, "outbox", [], raising=False)
    assert secret_key() == []
