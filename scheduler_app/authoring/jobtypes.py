"""Job types: the names ``schedule.v1`` JOB targets use, each served by one Celery task.

A JOB target (``{"type": "JOB", "job_type": "source.sync", "payload_ref": "..."}``) names what
to do, not which task does it. The registry maps job types to task names, from three sources:

1. a task that declares the job type it serves: ``@app.task(job_type="source.sync")`` (any
   Celery task option becomes a task attribute) or ``@scheduled(..., job_type="source.sync")``;
2. the setting ``SCHEDULER_JOB_TYPES = {"source.sync": "sources.tasks.sync"}``, which wins over
   the code, so an operator can point a job type at another task without a release.

Two tasks declaring the same job type (and no setting to decide) is a configuration error,
reported when that job type is used. See docs/contract.md.
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduler_app.authoring.declarations import registry
from scheduler_app.authoring.declared_tasks import check_job_type_name
from scheduler_app.conf import get_settings
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.handoff.allowlist import app_tasks


def declared_job_types() -> dict[str, set[str]]:
    """Job type -> the task names that declare it in code (tasks and ``@scheduled``)."""
    found: dict[str, set[str]] = {}
    for name, task in app_tasks().items():
        declared = getattr(task, "job_type", None)
        if isinstance(declared, str) and declared:
            found.setdefault(declared, set()).add(name)
    for declaration in registry().declarations():
        if declaration.options.job_type:
            found.setdefault(declaration.options.job_type, set()).add(declaration.task)
    return found


def configured_job_types() -> Mapping[str, str]:
    """The ``SCHEDULER_JOB_TYPES`` setting (job type -> task name), empty when unset.

    A setting of another shape is refused loudly, naming what is wrong, rather than ignored.
    """
    configured = get_settings().JOB_TYPES or {}
    if not isinstance(configured, Mapping) or not all(
        isinstance(name, str) and isinstance(task, str) and name and task
        for name, task in configured.items()
    ):
        raise ScheduleValidationError(
            "job_type",
            "SCHEDULER_JOB_TYPES must be a dict of job type -> Celery task name, e.g. "
            f"{{'source.sync': 'sources.tasks.sync'}}; got {configured!r:.200}",
            code="bad_setting",
        )
    return configured


def job_types() -> dict[str, str]:
    """Every job type that resolves to exactly one task: job type -> task name."""
    resolved = {
        job_type: next(iter(tasks))
        for job_type, tasks in declared_job_types().items()
        if len(tasks) == 1
    }
    resolved.update(configured_job_types())
    return dict(sorted(resolved.items()))


def resolve(job_type: object) -> str:
    """The task name serving ``job_type``; ``ScheduleValidationError`` on ``job_type`` if none.

    Says nothing about whether the task may be scheduled: callers check the allowlist
    (``scheduler_app.handoff.allowlist.check_target``) on the result, as for any task.
    """
    name = check_job_type_name(job_type)
    configured = configured_job_types()
    if name in configured:
        return str(configured[name])
    tasks = declared_job_types().get(name, set())
    if len(tasks) == 1:
        return next(iter(tasks))
    if tasks:
        raise ScheduleValidationError(
            "job_type",
            f"job type {name!r} is declared by several tasks ({', '.join(sorted(tasks))}); "
            "keep one declaration, or choose with SCHEDULER_JOB_TYPES = "
            f"{{{name!r}: '<task name>'}}",
            code="ambiguous_job_type",
        )
    known = ", ".join(job_types()) or "none yet"
    raise ScheduleValidationError(
        "job_type",
        f"unknown job type {name!r} (known: {known}); declare it on the task that serves it "
        f"(@app.task(job_type={name!r}) or @scheduled(..., job_type={name!r})) or map it in "
        f"SCHEDULER_JOB_TYPES = {{{name!r}: '<celery task name>'}}",
        code="unknown_job_type",
    )
