"""``@scheduled`` above django.tasks' ``@task()``: the Task itself comes back (django.tasks'
worker imports the task by its module path and needs a ``Task`` there), declared under its
module path and marked schedulable; and ``current_occurrence()`` without Celery."""

from __future__ import annotations

import sys

import pytest

from scheduler_app.authoring.declarations import isolated_registry, scheduled
from scheduler_app.context import current_occurrence
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.handoff import djtasks_compat as compat
from scheduler_app.handoff import djtasks_registry as djtasks

task = compat.framework.task  # django.tasks (Django 6) or the django-tasks backport
Task = compat.Task


@task()
def cleanup() -> None:
    """A module-level django.tasks task."""


def test_scheduled_returns_the_task_itself_declared_by_its_module_path() -> None:
    with isolated_registry() as declared:
        decorated = scheduled(every="10s")(cleanup)
    assert decorated is cleanup
    assert isinstance(decorated, Task)
    [declaration] = declared.declarations()
    name = f"{__name__}.cleanup"
    assert declaration.task == name
    assert declaration.key == f"{name}:default"
    assert declaration.options.rule == "10"
    assert djtasks.is_marked(name)
    assert djtasks.find(name) is cleanup  # how services and the outbox find it


def test_below_the_task_decorator_names_both_frameworks() -> None:
    with isolated_registry(), pytest.raises(ScheduleValidationError, match=r"@task\(\)"):
        scheduled(every="10s")(lambda: None)  # type: ignore[type-var]


def test_find_never_imports_a_module_a_name_points_at() -> None:
    before = set(sys.modules)
    assert djtasks.find("tests.unit.never_imported_module.task") is None
    assert not {name for name in set(sys.modules) - before if "never_imported" in name}


def test_the_context_is_none_outside_any_task_without_celery(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "celery._state", raising=False)
    assert current_occurrence() is None
