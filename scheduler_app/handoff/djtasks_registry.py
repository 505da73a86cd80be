"""Which django.tasks ``Task`` a schedule names, and the ones ``@scheduled`` marked schedulable.

A django.tasks task is named by its module path (``func.__module__ + "." + func.__qualname__``),
the path the worker imports it from. Names are looked up among modules already imported (after
one autodiscovery of the installed apps' ``tasks`` modules), never by importing whatever a
form or a file names.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from django.utils.module_loading import autodiscover_modules

from scheduler_app.errors import ScheduleValidationError
from scheduler_app.handoff import djtasks_compat as compat

_marked: set[str] = set()
"""Module paths of the tasks ``@scheduled`` decorated (a ``Task`` is frozen: no attribute)."""
_discovered = threading.Event()


def is_task(target: object) -> bool:
    """``target`` is a django.tasks ``Task`` (False when django.tasks is not installed)."""
    return compat.AVAILABLE and isinstance(target, compat.Task)


def name_of(task: Any) -> str:
    """The task's module path: what a schedule stores and what the worker imports."""
    name = str(task.module_path)
    if "<locals>" in name:
        raise ScheduleValidationError(
            "task",
            f"{name!r} is defined inside a function; django.tasks imports a task by its module "
            "path, so a scheduled task must be a module-level function",
            code="not_a_task",
        )
    return name


def mark_schedulable(task: Any) -> None:
    _marked.add(name_of(task))


def is_marked(name: str) -> bool:
    return name in _marked


def marked() -> list[str]:
    return sorted(_marked)


def discover() -> None:
    """Import every installed app's ``tasks`` module once (as Celery's autodiscovery does)."""
    if compat.AVAILABLE and not _discovered.is_set():
        autodiscover_modules("tasks")
        _discovered.set()


def find(name: str) -> Any:
    """The django.tasks ``Task`` at module path ``name`` among imported modules, or None."""
    if not compat.AVAILABLE or not isinstance(name, str) or "." not in name:
        return None
    discover()
    module_name, _, attribute = name.rpartition(".")
    module = sys.modules.get(module_name)
    target = getattr(module, attribute, None) if module is not None else None
    return target if is_task(target) else None
