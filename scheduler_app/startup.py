"""The system checks, run again when a beat or a worker starts.

``manage.py check`` is a step people skip; a worker or a beat started with a wrong task class
runs each schedule once and then skips every slot, without a word. So both processes run the
scheduler's checks (tagged ``TAG``, with database access: the stored schedules count)
when they start: a Warning is logged, an Error refuses to start, one line per error with its
fix. ``CELERY_SKIP_CHECKS=1`` (Celery's own switch for Django's checks) skips them.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from celery import signals
from django.core import checks
from django.db import connections

TAG = "scheduler_app"
"""The tag of the checks (``scheduler_app.checks``) a beat and a worker run at start."""

logger = logging.getLogger("scheduler_app.startup")


class RefusedToStart(SystemExit):
    """An Error from the checks: Celery lets a SystemExit out of a signal receiver (it logs
    and swallows every Exception), so the process exits with status 1."""

    def __init__(self, message: str) -> None:
        super().__init__(1)
        self.message = message

    def __str__(self) -> str:
        return self.message


def startup_problems() -> list[checks.CheckMessage]:
    """The scheduler's checks that are not silenced (``SILENCED_SYSTEM_CHECKS``)."""
    try:
        found = checks.run_checks(tags=[TAG], databases=list(connections))
    finally:
        # Connections opened here must not be shared with the pool's forked children.
        connections.close_all()
    return [message for message in found if not message.is_silenced()]


def refuse_on_errors(process: str, problems: list[checks.CheckMessage]) -> None:
    """Log the warnings; raise ``RefusedToStart`` naming every error and its fix."""
    errors = [p for p in problems if p.level >= checks.ERROR]
    for problem in problems:
        if problem.level < checks.ERROR:
            logger.warning("%s", one_line(problem), extra={"action": f"{process}.check"})
    if errors:
        lines = "\n".join(one_line(error) for error in errors)
        refused = RefusedToStart(
            f"the {process} refuses to start: {len(errors)} system check error(s) "
            f"(`python manage.py check --database default` shows the same)\n{lines}"
        )
        # The process's own stderr: a beat has replaced sys.stderr with a logging proxy by
        # now, which drops what Python prints of a SystemExit at exit.
        print(refused.message, file=sys.__stderr__ or sys.stderr, flush=True)
        raise refused


def one_line(message: checks.CheckMessage) -> str:
    fix = f" -- fix: {message.hint}" if message.hint else ""
    return f"{message.id}: {message.msg}{fix}"


def _skipped() -> bool:
    return bool(os.environ.get("CELERY_SKIP_CHECKS"))


def check_process(process: str, sender: Any) -> None:
    if _skipped():
        return
    app = getattr(sender, "app", None)
    if app is not None:
        # The checks read Celery's current app; a beat does not make its own app current,
        # and another app created while Django loaded (a project's) may be.
        app.set_current()
    refuse_on_errors(process, startup_problems())


@signals.beat_init.connect(dispatch_uid="scheduler_app.startup.beat")
def check_beat(sender: Any = None, **kwargs: Any) -> None:
    check_process("beat", sender)


@signals.worker_init.connect(dispatch_uid="scheduler_app.startup.worker")
def check_worker(sender: Any = None, **kwargs: Any) -> None:
    check_process("worker", sender)
