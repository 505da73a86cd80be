"""Worker metrics that work with a plain prefork worker, without ``PROMETHEUS_MULTIPROC_DIR``.

A prefork worker counts outcomes in its pool's child processes, each with counters of its
own: served from the main process, or from a child recycled by ``max_tasks_per_child``, they
came out empty or partial. When the worker starts (``worker_init``, in the main process
before the pool forks) and ``PROMETHEUS_MULTIPROC_DIR`` is not set, this module makes a fresh
directory, sets the variable for the pool, and switches prometheus-client to its multiprocess
values: every child then writes its counters there, and a scrape serves the sum over every
child, the ones that exited included. ``SCHEDULER_WORKER_METRICS_PORT`` serves that sum from
the main process; the directory is removed when the worker stops.

``SCHEDULER_WORKER_METRICS = False`` leaves prometheus-client alone. A directory set by hand
(``PROMETHEUS_MULTIPROC_DIR``) is used as it is and never removed.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from typing import Any

from celery import concurrency, signals
from celery.concurrency.prefork import TaskPool as PreforkPool
from prometheus_client import values

from scheduler_app.conf import get_settings
from scheduler_app.monitoring import metrics

logger = logging.getLogger("scheduler_app.metrics")

ENV = "PROMETHEUS_MULTIPROC_DIR"
_made: list[str] = []
"""The directory this process made (removed at shutdown)."""


def is_prefork(pool: Any) -> bool:
    try:
        implementation = concurrency.get_implementation(pool or "prefork")
    except (KeyError, ValueError, ImportError):
        return False
    return isinstance(implementation, type) and issubclass(implementation, PreforkPool)


def prepare(pool: Any) -> str | None:
    """Give a prefork pool a multiprocess directory; the directory in use, or None."""
    settings = get_settings()
    if os.environ.get(ENV):
        return os.environ[ENV]
    if not settings.WORKER_METRICS or not is_prefork(pool):
        return None
    path = tempfile.mkdtemp(prefix="scheduler-metrics-")
    os.environ[ENV] = path
    # Values made from now on (a labelled series is made on first use, in the child that
    # counts it) are written to files in ``path``.
    values.ValueClass = values.get_value_class()
    _made.append(path)
    logger.info(
        "worker metrics: the pool's counters are summed over its processes",
        extra={"action": "metrics.multiprocess", "path": path},
    )
    return path


def forget() -> None:
    """Remove the directory ``prepare`` made (the worker stops)."""
    while _made:
        path = _made.pop()
        shutil.rmtree(path, ignore_errors=True)
        if os.environ.get(ENV) == path:
            del os.environ[ENV]
            values.ValueClass = values.get_value_class()


@signals.worker_init.connect(dispatch_uid="scheduler_app.monitoring.workers.init")
def on_worker_init(sender: Any = None, **_: Any) -> None:
    prepare(getattr(sender, "pool_cls", None))
    port = get_settings().WORKER_METRICS_PORT
    if port:
        metrics.serve(port)


@signals.worker_shutdown.connect(dispatch_uid="scheduler_app.monitoring.workers.shutdown")
def on_worker_shutdown(sender: Any = None, **_: Any) -> None:
    forget()
