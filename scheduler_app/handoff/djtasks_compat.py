"""django.tasks, from Django 6 (``django.tasks``) or the ``django-tasks`` backport.

The only module of the package that imports it. When neither is installed ``AVAILABLE`` is
False and the names are None: ``djtasks_registry`` then finds no task, and the receivers of
``scheduler_app.djtasks`` are not connected. django-tasks-db's model is read through the app
registry (``djtasks.results``), since importing it outside ``INSTALLED_APPS`` raises.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

FRAMEWORKS = ("django.tasks", "django_tasks")
"""Django 6's own framework first (django-tasks-db uses it there), then the backport."""

framework: Any = None
signals: Any = None
base: Any = None
for _name in FRAMEWORKS:
    try:
        framework = import_module(_name)
        signals = import_module(f"{_name}.signals")
        base = import_module(f"{_name}.base")
    except ImportError:
        framework = signals = base = None
        continue
    break

AVAILABLE = framework is not None
Task: Any = base.Task if base is not None else None
TaskResultStatus: Any = framework.TaskResultStatus if framework is not None else None
task_enqueued: Any = signals.task_enqueued if signals is not None else None
task_started: Any = signals.task_started if signals is not None else None
task_finished: Any = signals.task_finished if signals is not None else None
