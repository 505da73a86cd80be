"""The result backend's row, written with the outcome (issue 39: the worker in one commit).

With django-celery-results as the result backend (``result_backend = "django-db"``), Celery
stores a task's return value after the task: a ``SELECT`` and an ``INSERT`` of its own (the
manager's ``get_or_create``), committed apart from the outcome the scheduler has just
recorded. For a scheduled delivery on PostgreSQL the outcome statement now writes that row
itself (``INSERT ... ON CONFLICT (task_id) DO UPDATE``, as the manager's update does), in the
same statement and commit as the occurrence's end; the task's request is then told to
``ignore_result`` so that Celery does not write it again. The columns are computed by the
backend's own methods (``encode_result``, ``encode_content``, its meta and extended
properties), the way its ``_store_result`` computes them;
``tests/integration/test_worker_result_row.py`` compares the two rows column by column.

Anything else keeps Celery's own write: another backend, a task or request that ignores its
result, an eager call, a backend on another database, a value the backend cannot encode
(Celery then records the error as it always does), a failure, and the ORM path of the outcome
(SQLite, buffering and fixed-delay schedules).
"""

from __future__ import annotations

from typing import Any

from celery import states
from django.apps import apps
from django.db import DEFAULT_DB_ALIAS, connection, router

COLUMNS = (
    "task_id",
    "status",
    "result",
    "traceback",
    "meta",
    "content_encoding",
    "content_type",
    "periodic_task_name",
    "task_name",
    "task_args",
    "task_kwargs",
    "worker",
)
"""The row's columns besides its dates (``date_created`` and ``date_done`` are the outcome's
instant; ``date_started`` stays as it was)."""


def result_row(task: Any, result: Any) -> dict[str, Any] | None:
    """The django-celery-results row of ``task``'s successful run that returned ``result``,
    or None when Celery should write it itself (the module's docstring)."""
    request = task.request
    if connection.vendor != "postgresql" or request.is_eager or _ignores_result(task, request):
        return None
    backend = task.backend
    model = _task_result_model(backend)
    if model is None:
        return None
    try:
        encoded = backend.encode_result(result, states.SUCCESS)
        content_type, content_encoding, content = backend.encode_content(encoded)
        meta = {
            **backend._get_meta_from_request(request),
            "children": backend.current_task_children(request),
        }
        _, _, encoded_meta = backend.encode_content(meta)
        extended = backend._get_extended_properties(request, None)
    except Exception:  # a value the backend cannot encode: Celery's own path reports it
        return None
    row = {
        "task_id": str(request.id),
        "status": states.SUCCESS,
        "result": content,
        "traceback": None,
        "meta": encoded_meta,
        "content_encoding": content_encoding,
        "content_type": content_type,
        **{name: extended.get(name) for name in COLUMNS[7:]},
    }
    return {name: _text(row[name]) for name in COLUMNS}


def _ignores_result(task: Any, request: Any) -> bool:
    """The request's own ``ignore_result`` when it set one (its class's default does not
    count), else the task's: what Celery's tracer decides by."""
    explicit = vars(request).get("ignore_result")
    return bool(task.ignore_result if explicit is None else explicit)


def _task_result_model(backend: Any) -> Any:
    """django-celery-results' ``TaskResult`` when ``backend`` is its database backend and
    writes to the default database (the one the outcome is written to); else None."""
    if not apps.is_installed("django_celery_results"):
        return None
    model = getattr(backend, "TaskModel", None)
    if model is None or model is not apps.get_model("django_celery_results", "TaskResult"):
        return None
    if not hasattr(backend, "encode_content") or not hasattr(backend, "_get_extended_properties"):
        return None
    if router.db_for_write(model) not in (None, DEFAULT_DB_ALIAS):
        return None
    return model


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def table() -> str:
    """The ``TaskResult`` table's name."""
    model = apps.get_model("django_celery_results", "TaskResult")
    return str(model._meta.db_table)


def written(task: Any) -> None:
    """The outcome statement wrote the row: Celery must not write it again."""
    task.request.ignore_result = True
