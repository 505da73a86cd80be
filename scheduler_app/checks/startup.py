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
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

from celery import signals
from django.core import checks
from django.db import connections

TAG = "scheduler_app"
"""The tag of the checks (``scheduler_app.checks``) a beat and a worker run at start."""

logger = logging.getLogger("scheduler_app.startup")
PROCESSES = ("beat", "worker")
VALUED_OPTIONS = frozenset({"-A", "--app", "-b", "--broker", "--result-backend", "--loader"})
VALUED_OPTIONS |= {"--config", "--workdir"}
"""Celery's global options that take a value: ``celery -A beat worker`` starts a worker."""
_beat_schedulers: list[Any] = []
"""The scheduler class (or its name) of the beat this process runs, once it starts."""
_checked: set[str] = set()
"""The processes whose checks already ran here (a beat of ours runs them before it is ready)."""


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
        _refuse(
            f"the {process} refuses to start: {len(errors)} system check error(s) "
            f"(`python manage.py check --database default` shows the same)\n{lines}"
        )


def _refuse(message: str) -> NoReturn:
    # The process's own stderr: a beat has replaced sys.stderr with a logging proxy by now,
    # which drops what Python prints of a SystemExit at exit.
    print(message, file=sys.__stderr__ or sys.stderr, flush=True)
    raise RefusedToStart(message)


def starting_process(argv: Sequence[str] | None = None) -> str | None:
    """``"beat"`` or ``"worker"`` when this process is ``celery ... beat`` or ``... worker``
    (an embedded beat, ``worker -B``, is the worker), else None: a check run by ``manage.py``
    or a test reports, it never stops the process."""
    args = list(sys.argv if argv is None else argv)
    program = os.path.basename(args[0]) if args else ""
    if program == "__main__.py":  # python -m celery
        program = os.path.basename(os.path.dirname(args[0]))
    if not program.startswith("celery"):
        return None
    words = iter(args[1:])
    for word in words:
        if word in VALUED_OPTIONS:
            next(words, None)
        elif not word.startswith("-"):
            # The first word that is not an option is Celery's command.
            return word if word in PROCESSES else None
    return None


def debug_requested(argv: Sequence[str] | None = None) -> bool:
    """``-l DEBUG`` / ``--loglevel=debug`` on the command line: the traceback is wanted."""
    args = [word.lower() for word in (sys.argv if argv is None else argv)]
    for index, word in enumerate(args):
        if word in ("-l", "--loglevel") and index + 1 < len(args):
            word = f"--loglevel={args[index + 1]}"
        if word.startswith(("--loglevel=", "-l")) and word.endswith("debug"):
            return True
    return False


def refuse_to_import(process: str, error: checks.CheckMessage, exc: BaseException) -> None:
    """Stop a starting beat or worker whose task modules cannot be imported, with one line
    (the check's, with its fix); the traceback only when ``-l DEBUG`` asked for it.

    Celery imports the task modules before the ``worker_init``/``beat_init`` checks run; an
    exception there is its own 90-line traceback. The Django fix-up runs the system checks
    just before, so ``scheduler_app.checks`` calls this when it finds the import failing."""
    if debug_requested():
        traceback.print_exception(exc, file=sys.__stderr__ or sys.stderr)
    _refuse(f"the {process} refuses to start: {one_line(error)}")


def running_beat_scheduler() -> Any:
    """The scheduler (a class or a name) of the beat starting in this process, or None."""
    return _beat_schedulers[-1] if _beat_schedulers else None


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


def check_starting_beat(scheduler: Any) -> None:
    """Run the beat's checks from the durable scheduler's own set-up, before it says it is
    ready: Celery builds the scheduler (which waits for the database, syncs, logs "ready")
    before it sends ``beat_init``. Only in a ``celery beat`` process (a worker's embedded
    beat was checked with the worker; a test's scheduler is not starting anything)."""
    if starting_process() != "beat" or "beat" in _checked:
        return
    _beat_schedulers.append(type(scheduler))
    check_process("beat", scheduler)
    _checked.add("beat")


@signals.beat_init.connect(dispatch_uid="scheduler_app.checks.startup.beat")
def check_beat(sender: Any = None, **kwargs: Any) -> None:
    if "beat" in _checked:
        return  # the durable scheduler ran them already (``check_starting_beat``)
    scheduler = getattr(sender, "scheduler_cls", None)
    if scheduler is not None:
        # What the beat really runs (``-S`` or the setting): the checks judge this one.
        _beat_schedulers.append(scheduler)
    check_process("beat", sender)


@signals.worker_init.connect(dispatch_uid="scheduler_app.checks.startup.worker")
def check_worker(sender: Any = None, **kwargs: Any) -> None:
    check_process("worker", sender)
