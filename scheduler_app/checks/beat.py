"""Which beat scheduler will run the schedules: E002 and W004 (``scheduler_app.checks``).

Celery's beat runs whatever scheduler ``-S`` or ``CELERY_BEAT_SCHEDULER`` names, Celery's own
``PersistentScheduler`` when neither does; that one reads no schedule of ours and says nothing.
So the checks say, at ``manage.py check`` and when a worker or a beat starts, when the
schedules that hand off to Celery would not run:

- E002: ``CELERY_BEAT_SCHEDULER`` names another scheduler while schedules are active;
- W004: the beat starting in this process runs another scheduler, or the setting is unset
  (Celery's default), while active schedules (or, without the database, ``@scheduled``
  declarations) hand off to Celery.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.core import checks
from django.db import DatabaseError, connections

from scheduler_app.authoring.declarations import registry
from scheduler_app.models import HandoffTarget, Schedule

OUR_SCHEDULER = "scheduler_app.beat:DurableScheduler"
CELERY_DEFAULT_SCHEDULER = "celery.beat.PersistentScheduler"
T = TypeVar("T")
FIX = f'set CELERY_BEAT_SCHEDULER = "{OUR_SCHEDULER}", or start the beat with -S {OUR_SCHEDULER}'


def celery_schedules() -> int:
    """How many active schedules hand off to Celery, the only ones a beat must run: a
    django.tasks schedule runs from ``run_scheduler`` whatever the beat setting says."""
    return read_or(0, Schedule.objects.filter(status="active", target=HandoffTarget.CELERY).count)


def read_or(default: T, read: Callable[[], T]) -> T:
    """``read()``, or ``default`` when the tables do not exist yet (not migrated: nothing is
    scheduled); a transaction around the check is then marked to be rolled back."""
    try:
        return read()
    except DatabaseError:
        connection = connections["default"]
        if connection.in_atomic_block:
            connection.needs_rollback = True
        return default


def celery_declarations(app: Any) -> int:
    """How many ``@scheduled`` declarations of this process name a task of the Celery
    ``app``: what a ``check`` without the database knows will be scheduled."""
    return sum(1 for declaration in registry() if declaration.task in app.tasks)


def beat_scheduler_errors(scheduler: Any, schedules_exist: bool) -> list[checks.CheckMessage]:
    """E002 when ``beat_scheduler`` names another scheduler while schedules are active."""
    name = scheduler_name(scheduler)
    if not schedules_exist or not name or names_ours(scheduler) or is_celery_default(name):
        return []  # Celery's default: the beat may still be started with -S (W004 says so)
    return [
        checks.Error(
            f"CELERY_BEAT_SCHEDULER is {name!r} while active schedules exist: a beat started "
            "without -S would never run them",
            hint=f'set CELERY_BEAT_SCHEDULER = "{OUR_SCHEDULER}" (or remove the setting and '
            f"start the beat with -S {OUR_SCHEDULER})",
            id="scheduler_app.E002",
        )
    ]


def beat_scheduler_warnings(
    configured: Any, running: Any, waiting: str
) -> list[checks.CheckMessage]:
    """W004 when ``waiting`` ("3 active schedule(s)", "" for none) hand off to Celery and no
    beat would run them: the beat starting in this process (``running``) is not ours, or,
    outside a beat, ``CELERY_BEAT_SCHEDULER`` is unset (Celery's default), whose beat runs
    none of them unless started with ``-S``. Another scheduler in the setting is E002."""
    if not waiting:
        return []
    if running is not None:
        if names_ours(running):
            return []
        text = (
            f"this beat runs {scheduler_name(running)!r}, not the durable scheduler, while "
            f"{waiting} hand off to Celery: none of them will run"
        )
    elif is_celery_default(scheduler_name(configured)):
        text = (
            f"CELERY_BEAT_SCHEDULER is not set (Celery's default, {CELERY_DEFAULT_SCHEDULER}) "
            f"while {waiting} hand off to Celery: a beat started without "
            f"-S {OUR_SCHEDULER} runs none of them"
        )
    else:
        return []
    return [checks.Warning(text, hint=FIX, id="scheduler_app.W004")]


def beat_scheduler_messages(
    configured: Any, running: Any, waiting: str, *, active: int = 0
) -> list[checks.CheckMessage]:
    """E002 when ``active`` schedules are stored (never for a beat given ``-S`` ours), else
    W004 for what is ``waiting``."""
    if active and (running is None or not names_ours(running)):
        errors = beat_scheduler_errors(configured, schedules_exist=True)
        if errors:
            return errors
    return beat_scheduler_warnings(configured, running, waiting)


def scheduler_name(scheduler: Any) -> str:
    """``module.Class`` of a scheduler class, or the name as given."""
    if isinstance(scheduler, str):
        return scheduler
    if scheduler is None:
        return ""
    module = getattr(scheduler, "__module__", "")
    return f"{module}.{getattr(scheduler, '__qualname__', '')}".strip(".")


def is_celery_default(name: str) -> bool:
    return name.replace(":", ".") == CELERY_DEFAULT_SCHEDULER


def names_ours(scheduler: Any) -> bool:
    """``scheduler`` (a class or its name) is the durable scheduler or a subclass, told by name:
    the beat module is not imported here (the checks load with the app, the beat only in a beat
    process)."""
    ours = OUR_SCHEDULER.replace(":", ".")
    if isinstance(scheduler, type):
        return any(scheduler_name(cls) == ours for cls in scheduler.__mro__)
    return scheduler_name(scheduler).replace(":", ".") in (ours, "DurableScheduler")
