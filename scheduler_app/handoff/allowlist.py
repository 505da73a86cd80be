"""Which Celery tasks a schedule may target: the allowlist.

A task is schedulable when it is registered in the Celery app, is an ``OccurrenceTask`` (the
base class that records occurrences), is not one of Celery's own (``celery.*``), and is either
marked (``@scheduled``, ``@app.task(schedulable=True)``) or named by ``SCHEDULER_ALLOWED_TASKS``
(names or fnmatch patterns). Used by the admin's choices, the service layer, the importers and
the decorator sync, so every way in refuses the same tasks with the same message.

A django.tasks ``Task`` (found by ``djtasks_registry``) is schedulable when it is marked by
``@scheduled`` or named by ``SCHEDULER_ALLOWED_TASKS``; ``target_of`` says which handoff target
a task name belongs to (a name the Celery app registers stays Celery's).

An event schedule's task is ``event:<type>`` (``EVENT_PREFIX``; docs/events.md): no code runs
it, so it needs no registration; its type must be a CloudEvents type such as
``contract.deadline_reached``, and where it may go is checked against its endpoint
(``scheduler_app.handoff.endpoints``).
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import Any

from celery import current_app

from scheduler_app.conf import get_settings
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.handoff import djtasks_registry as djtasks
from scheduler_app.models import HandoffTarget

FORBIDDEN_PREFIXES = ("celery.",)
EVENT_PREFIX = "event:"
"""The task name of an event schedule is this prefix and its event type (reserved: no Celery or
django.tasks task of such a name is ever scheduled)."""
EVENT_TYPE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,148}[A-Za-z0-9])?\Z")
"""A CloudEvents ``type``: letters, digits, dots, underscores and hyphens, at most 150."""
OCCURRENCE_MARKER = "records_occurrences"
"""Class attribute of ``scheduler_app.tasks.OccurrenceTask`` (``True``)."""


def registered_tasks() -> set[str]:
    """Names of the tasks the current Celery app knows, after its autodiscovery ran."""
    return set(app_tasks())


def app_tasks() -> dict[str, Any]:
    """The current Celery app's tasks, its autodiscovery run once per app."""
    app = current_app
    if task_names_loaded.get(id(app)) is None:
        app.loader.import_default_modules()
        task_names_loaded[id(app)] = True
    return dict(app.tasks)


task_names_loaded: dict[int, bool] = {}
"""The apps whose task modules were imported (autodiscovery runs once per app)."""


def is_occurrence_task(task: Any) -> bool:
    """``task`` records occurrences: its class is ``OccurrenceTask`` or a subclass.

    Asked by the marker the base class carries (``records_occurrences``), not by importing it:
    the worker's adapter (``scheduler_app.tasks``) sits above this allowlist, which the
    definitions' validation below it uses.
    """
    return getattr(task, OCCURRENCE_MARKER, False) is True


def is_allowed_name(name: str, task: Any = None) -> bool:
    """The name passes the allowlist (marker or setting); says nothing about registration."""
    if name.startswith(FORBIDDEN_PREFIXES):
        return False
    if task is not None and getattr(task, "schedulable", False):
        return True
    return any(fnmatchcase(name, pattern) for pattern in get_settings().ALLOWED_TASKS)


def allowed_tasks() -> list[str]:
    """Sorted names of the tasks a schedule may target now (Celery's and django.tasks')."""
    celery = {
        name
        for name, task in app_tasks().items()
        if is_allowed_name(name, task) and is_occurrence_task(task)
    }
    djtasks.discover()
    return sorted(celery | set(djtasks.marked()))


def event_type_of(name: str) -> str | None:
    """The event type of an event schedule's task name (``event:<type>``); None for a task."""
    return name[len(EVENT_PREFIX) :] if name.startswith(EVENT_PREFIX) else None


def check_event_type(name: str) -> str:
    """The event type of ``event:<type>``, or ``ScheduleValidationError`` on ``task``."""
    event_type = name[len(EVENT_PREFIX) :]
    if not EVENT_TYPE.match(event_type):
        raise ScheduleValidationError(
            "task",
            f"{event_type!r} is not an event type: write event:<type> with letters, digits, "
            "dots, underscores or hyphens (at most 150, starting and ending with a letter or "
            "digit), e.g. event:contract.deadline_reached",
            code="invalid_event_type",
        )
    return event_type


def target_of(name: str) -> str:
    """The handoff target of task ``name``: an event for ``event:<type>``; Celery when its app
    registers the name, django.tasks when the name is a django.tasks ``Task``'s module path;
    Celery otherwise (the default)."""
    if name.startswith(EVENT_PREFIX):
        return HandoffTarget.EVENT
    if name in app_tasks() or djtasks.find(name) is None:
        return HandoffTarget.CELERY
    return HandoffTarget.DJANGO_TASKS


def _check_djtask(name: str) -> bool:
    """True when ``name`` is an allowed django.tasks task; raises when it is one not allowed;
    False when it is none."""
    if djtasks.find(name) is None:
        return False
    if djtasks.is_marked(name) or is_allowed_name(name):
        return True
    raise ScheduleValidationError(
        "task",
        f"django.tasks task {name!r} is not schedulable: put @scheduled(...) above its @task() "
        "decorator, or add it to SCHEDULER_ALLOWED_TASKS",
        code="forbidden_task",
    )


def check_target(name: str) -> None:
    """Raise ``ScheduleValidationError`` on ``task`` unless ``name`` may be scheduled."""
    if name.startswith(EVENT_PREFIX):
        check_event_type(name)
        return
    if name.startswith(FORBIDDEN_PREFIXES):
        raise ScheduleValidationError(
            "task",
            f"{name!r} is one of Celery's internal tasks and can never be scheduled",
            code="forbidden_task",
        )
    task = app_tasks().get(name)
    if task is None and _check_djtask(name):
        return
    if task is None:
        raise ScheduleValidationError(
            "task",
            f"unknown task {name!r}: no task of that name is registered in the Celery app, and "
            "no django.tasks task has that module path; check the name (see `celery -A <your "
            "app> inspect registered`; a django.tasks task is named 'module.function') or "
            "import its module",
            code="unknown_task",
        )
    if not is_occurrence_task(task):
        raise ScheduleValidationError(
            "task",
            f"task {name!r} does not use scheduler_app.tasks.OccurrenceTask as its base class, "
            "so its runs would not be recorded; create the Celery app with "
            "task_cls='scheduler_app.tasks:OccurrenceTask' or pass base=OccurrenceTask",
            code="not_occurrence_task",
        )
    if not is_allowed_name(name, task):
        raise ScheduleValidationError(
            "task",
            f"task {name!r} is not schedulable: mark it with @scheduled or "
            "@app.task(schedulable=True), or add it to SCHEDULER_ALLOWED_TASKS",
            code="forbidden_task",
        )
