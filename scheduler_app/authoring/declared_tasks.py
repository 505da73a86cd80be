"""The Celery tasks behind ``@scheduled``: their names, read without building lazy tasks, and
the mark that lets the allowlist (``scheduler_app.handoff.allowlist``) accept them, and the names of
job types (``@scheduled(job_type=...)``, resolved to tasks by ``scheduler_app.authoring.jobtypes``).

``@shared_task`` and ``@app.task`` return proxies that build the task on first use; touching
one while task modules are imported would finalize the Celery app early. So the name is read
from what the proxy was given, and the ``schedulable`` mark is set on the task wherever it
exists already and, for an app not finalized yet, right after that app builds its tasks.
"""

from __future__ import annotations

from typing import Any

from celery import Task, _state, current_app
from celery.local import Proxy

from scheduler_app.authoring.options import check_length
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.handoff import djtasks_registry as djtasks

MAX_TASK_NAME_LENGTH = 200
MAX_JOB_TYPE_LENGTH = 200


def task_name_of(target: object) -> str:
    """The task name of ``target``, without building a lazy Celery task (module docstring)."""
    if djtasks.is_task(target):  # a django.tasks Task: named by the path its worker imports
        return _usable(djtasks.name_of(target))
    return _usable(_celery_task_name(target))


def _usable(name: object) -> str:
    if not isinstance(name, str) or not name or len(name) > MAX_TASK_NAME_LENGTH:
        raise ScheduleValidationError("task", f"the task has no usable name ({name!r})")
    return name


def _celery_task_name(target: object) -> object:
    if issubclass(type(target), Proxy):  # not isinstance: that would evaluate the proxy
        name = _lazy_task_name(target) or getattr(target, "name", None)
    elif isinstance(target, Task) or (isinstance(target, type) and issubclass(target, Task)):
        name = target.name
    else:
        raise ScheduleValidationError(
            "task",
            f"@scheduled must decorate a Celery task or a django.tasks task, got {target!r}; put "
            "it above @app.task / @shared_task / @task() (decorators apply bottom-up)",
            code="not_a_task",
        )
    return name


def _lazy_task_name(proxy: object) -> str | None:
    evaluated = getattr(type(proxy), "__evaluated__", None)
    if evaluated is not None and evaluated(proxy):
        return None  # built already: reading .name is free
    local = object.__getattribute__(proxy, "_Proxy__local")
    args = object.__getattribute__(proxy, "_Proxy__args")
    options = object.__getattribute__(proxy, "_Proxy__kwargs")
    fun: Any = args[0] if args else None
    name: Any = options.get("name")
    app: Any = getattr(local, "__self__", None)  # @app.task: app._task_from_fun
    if app is None and getattr(local, "__closure__", None):  # @shared_task: task_by_cons
        cells = dict(
            zip(
                local.__code__.co_freevars,
                (c.cell_contents for c in local.__closure__),
                strict=True,
            )
        )
        fun, name, app = cells.get("fun"), cells.get("name"), current_app
    if name:
        return str(name)
    if callable(fun) and app is not None and hasattr(app, "gen_task_name"):
        return str(app.gen_task_name(fun.__name__, fun.__module__))
    return None


def mark_schedulable(target: object) -> None:
    """Set ``schedulable = True`` on the task (the allowlist's marker), now or at finalize."""
    if djtasks.is_task(target):  # frozen: the mark is kept by the registry
        djtasks.mark_schedulable(target)
        return
    _mark_celery_task(target)


def _mark_celery_task(target: object) -> None:
    evaluated = getattr(type(target), "__evaluated__", None)
    if not issubclass(type(target), Proxy) or (evaluated is not None and evaluated(target)):
        # A task, or a built one behind its proxy (setting through the proxy is free then).
        setattr(target, "schedulable", True)  # noqa: B010 - Celery tasks take any attribute
        return
    name = task_name_of(target)
    active: Any = getattr(_state, "_get_active_apps")  # noqa: B009 - not in the stubs
    apps = {id(app): app for app in active()}
    owner = getattr(object.__getattribute__(target, "_Proxy__local"), "__self__", None)
    if owner is not None:
        apps[id(owner)] = owner
    for app in apps.values():
        if app.finalized:
            _mark_in(app, name)
        else:
            app.on_after_finalize.connect(_marker(name), weak=False)


def _marker(name: str) -> Any:
    def mark(sender: Any, **_kwargs: Any) -> None:
        _mark_in(sender, name)

    return mark


def _mark_in(app: Any, name: str) -> None:
    task = app._tasks.get(name)
    if task is not None:
        task.schedulable = True


def check_job_type_name(job_type: object) -> str:
    """A job type's name: a non-empty string without surrounding spaces, at most 200 long."""
    if not isinstance(job_type, str) or not job_type.strip() or job_type != job_type.strip():
        raise ScheduleValidationError(
            "job_type",
            f"a job type is a non-empty name without surrounding spaces, e.g. 'source.sync'; "
            f"got {job_type!r}",
        )
    check_length(job_type, "job_type", MAX_JOB_TYPE_LENGTH)
    return job_type
