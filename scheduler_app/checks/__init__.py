"""Django system checks (``manage.py check``) for settings the scheduler depends on.

Every message has a stable id and says how to fix it:

- ``scheduler_app.E001``: a schedulable task does not use ``OccurrenceTask``
- ``scheduler_app.E002``: the beat scheduler setting names another scheduler while schedules exist
- ``scheduler_app.E003``: the example project's (or Django's "insecure") secret key outside DEBUG
- ``scheduler_app.E004``: an ``@scheduled`` declaration is invalid (unknown zone, bad rule ...)
- ``scheduler_app.E005``: schedules exist for a task that does not use ``OccurrenceTask``
  (``task_cls`` removed from the Celery app after schedules were made)
- ``scheduler_app.E006``: the Celery app's task modules cannot be imported
- ``scheduler_app.E007``: ``SCHEDULER_PARTITION_INTERVAL`` or ``SCHEDULER_PARTITIONS_AHEAD`` is
  not valid
- ``scheduler_app.E008``: ``SCHEDULER_SEARCH_CANDIDATES`` or ``SCHEDULER_SEARCH_SPAN_DAYS`` is not
  a whole number >= 1 (``search_checks``)
- ``scheduler_app.W001``: SQLite without ``BEGIN IMMEDIATE``
- ``scheduler_app.W002``: workers do not ack late / reject on worker loss
- ``scheduler_app.W004``: active Celery schedules (or ``@scheduled`` declarations) exist but the
  beat starting here, or ``CELERY_BEAT_SCHEDULER`` when unset, is not the durable scheduler
  (``beat_checks``)

The checks tagged ``startup.TAG`` are also run when a beat or a worker starts (``startup``), where
an Error refuses to start: a worker or beat that would run wrongly for hours says so at once.
"""

from __future__ import annotations

import linecache
import re
import traceback
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import django
from celery import current_app
from django.conf import settings
from django.core import checks, mail
from django.db.models import Count

from scheduler_app.checks import startup
from scheduler_app.checks.beat import (
    beat_scheduler_messages,
    celery_declarations,
    celery_schedules,
    read_or,
)
from scheduler_app.checks.search import (
    search_budget_settings,  # noqa: F401 - registers E008
    whole,
)
from scheduler_app.checks.startup import TAG  # importing it connects the beat and worker receivers
from scheduler_app.conf import get_settings
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.handoff.allowlist import is_allowed_name, is_occurrence_task
from scheduler_app.models import Schedule
from scheduler_app.partitions.ranges import Interval

SQLITE = "django.db.backends.sqlite3"
DEFINITION = re.compile(r"\s*(?:async\s+)?def\s+(\w+)")
INSECURE_KEYS = frozenset({"", "dev-only-insecure-key-change-me"})
"""Secret keys known to the world: the example project's former default, and empty."""
INSECURE_PREFIX = "django-insecure-"
"""What ``django-admin startproject`` puts in front of the key it generates for development."""
OCCURRENCE_TASK_FIX = (
    'create the Celery app with Celery(..., task_cls="scheduler_app.tasks:OccurrenceTask"), '
    "or give the task base=OccurrenceTask (a subclass of it is fine)"
)
PACKAGE_DIR = Path(__file__).resolve().parent.parent  # scheduler_app

_running = False
_loaded: weakref.WeakSet[Any] = weakref.WeakSet()
"""The Celery apps whose task modules were imported (an id could be reused by a new app)."""


@checks.register(TAG)
def sqlite_transaction_mode(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """SQLite shared by a beat and a worker needs ``BEGIN IMMEDIATE`` transactions.

    In SQLite's default (deferred) mode a transaction that reads, then writes, fails at once
    with "database is locked" when another process holds the write lock: SQLite refuses to wait
    there, whatever the ``timeout``. An outcome the worker could not record leaves its
    occurrence ``running`` until the lease runs out, and the task runs again.
    """
    return sqlite_warnings(settings.DATABASES)


def sqlite_warnings(databases: Mapping[str, Mapping[str, Any]]) -> list[checks.CheckMessage]:
    """W001 for each SQLite database of ``databases`` (a ``DATABASES`` setting) not IMMEDIATE."""
    messages: list[checks.CheckMessage] = []
    for alias, database in databases.items():
        if database.get("ENGINE") != SQLITE:
            continue
        mode = str(database.get("OPTIONS", {}).get("transaction_mode") or "DEFERRED")
        if mode.upper() != "IMMEDIATE":
            if django.VERSION >= (5, 1):
                fix = (
                    f'set DATABASES["{alias}"]["OPTIONS"]["transaction_mode"] = "IMMEDIATE" '
                    '(and a "timeout", e.g. 20 seconds), or use PostgreSQL'
                )
            else:  # the option arrived in Django 5.1
                fix = "use PostgreSQL, or Django 5.1+ with OPTIONS transaction_mode IMMEDIATE"
            messages.append(
                checks.Warning(
                    f"database {alias!r} is SQLite with transaction_mode {mode}: a beat and a "
                    "worker sharing it fail with 'database is locked' instead of waiting",
                    hint=fix,
                    id="scheduler_app.W001",
                )
            )
    return messages


def _celery_app() -> Any:
    """The project's Celery app, or None when the project created none (Celery's fallback)."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    return None if app.main in (None, "default") and not app.conf.broker_url else app


@checks.register(TAG)
def celery_configuration(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """E001/E004/E006 (the tasks), W002 (acks_late) and W004 (the ``@scheduled`` declarations
    and no beat of ours) against the project's Celery app, without the database
    (``manage.py check`` runs it before ``migrate``)."""
    app = _celery_app()
    if app is None or _running:
        # Re-entered: importing the task modules makes Celery's Django fix-up run the checks.
        return []
    messages = task_class_errors(app) + acks_late_warnings(app.conf)
    declared = celery_declarations(app)
    waiting = f"{declared} @scheduled declaration(s)" if declared else ""
    running = startup.running_beat_scheduler()
    return messages + beat_scheduler_messages(app.conf.beat_scheduler, running, waiting)


@checks.register(TAG, checks.Tags.database)
def celery_database_configuration(
    app_configs: Any = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """E005 (the tasks stored schedules target), E002 and W004 (the beat scheduler) from the
    database: Django runs a ``database``-tagged check only when asked for one
    (``manage.py check --database default``) or by tag, as a beat and a worker do at start.
    (Django 6 passes every alias to every check, so ``databases`` cannot tell it.)"""
    app = _celery_app()
    if app is None or _running or not kwargs.get("databases"):
        # Django runs a ``database``-tagged check on a plain ``manage.py check`` too (5.2 and
        # 6.1 alike), with ``databases=None``: the database is only read when asked for.
        return []
    messages = stored_target_errors(app, stored_targets())
    active = celery_schedules()
    # W004 for the declarations is the other check's; this one adds the stored schedules.
    waiting = f"{active} active schedule(s)" if active and not celery_declarations(app) else ""
    running = startup.running_beat_scheduler()
    return messages + beat_scheduler_messages(
        app.conf.beat_scheduler, running, waiting, active=active
    )


def stored_target_errors(app: Any, stored: Mapping[str, int]) -> list[checks.CheckMessage]:
    """E005 for each task that live schedules target and that is not an ``OccurrenceTask``."""
    if _import_task_modules(app) is not None:
        return []  # E004/E006: the check without the database says it
    return [
        _stored_target_error(name, stored[name])
        for name, task in sorted(app.tasks.items())
        if name in stored and not is_occurrence_task(task)
    ]


def stored_targets() -> dict[str, int]:
    """Task name -> how many live (not cancelled or completed) schedules target it; empty
    when the tables do not exist yet."""
    rows = (
        Schedule.objects.exclude(status__in=("cancelled", "completed"))
        .values("task")
        .annotate(count=Count("id"))
        .values_list("task", "count")
    )
    return read_or({}, lambda: dict(rows))


def task_class_errors(
    app: Any, stored: Mapping[str, int] | None = None
) -> list[checks.CheckMessage]:
    """E005 for every task live schedules target, E001 for every task schedules may target,
    that is not an ``OccurrenceTask``; E004/E006 when the task modules cannot be imported.

    Such a task runs once, never records its outcome, and every later slot of its schedule is
    skipped as ``overlap``: the silent failure this check exists for.
    """
    failed = _import_task_modules(app)
    if failed is not None:
        return [failed]
    stored = stored or {}
    messages: list[checks.CheckMessage] = []
    for name, task in sorted(app.tasks.items()):
        if is_occurrence_task(task):
            continue
        if name in stored:
            messages.append(_stored_target_error(name, stored[name]))
        elif is_allowed_name(name, task):
            messages.append(
                checks.Error(
                    f"task {name!r} is scheduled but does not derive from "
                    "scheduler_app.tasks.OccurrenceTask: each schedule would run once, "
                    "stay 'dispatched' and skip every later slot as 'overlap'",
                    hint=OCCURRENCE_TASK_FIX,
                    id="scheduler_app.E001",
                )
            )
    return messages


def _stored_target_error(name: str, count: int) -> checks.Error:
    return checks.Error(
        f"{count} schedule(s) target task {name!r}, which does not derive from "
        "scheduler_app.tasks.OccurrenceTask (was task_cls removed from the Celery app?): each "
        "would run once more, stay 'dispatched' and skip every later slot as 'overlap'",
        hint=OCCURRENCE_TASK_FIX,
        id="scheduler_app.E005",
    )


def _import_task_modules(app: Any) -> checks.CheckMessage | None:
    """Import the app's task modules once, as a worker does; the failure as a message.

    Both failures stop a worker and a beat at start, so both are Errors here.
    """
    global _running
    _running = True
    try:
        if app not in _loaded:
            app.loader.import_default_modules()
            _loaded.add(app)
    except ScheduleValidationError as exc:
        error = checks.Error(
            f"invalid @scheduled declaration{_declared_on(exc)} at {_where(exc)}: {exc}",
            hint="fix that option of the @scheduled decorator (docs/decorator.md lists them); "
            "a worker and a beat cannot import the module until then",
            id="scheduler_app.E004",
        )
        _refuse_if_starting(app, error, exc)
        return error
    except Exception as exc:  # a broken tasks module is reported, not raised from a check
        error = checks.Error(
            f"the Celery app's task modules cannot be imported ({exc!r} at {_where(exc)}), so "
            "a worker or a beat would fail at start",
            hint="fix the import error; `celery -A <your app> inspect registered` shows it too",
            id="scheduler_app.E006",
        )
        _refuse_if_starting(app, error, exc)
        return error
    finally:
        _running = False
    return None


def _refuse_if_starting(app: Any, error: checks.CheckMessage, exc: BaseException) -> None:
    """In a starting beat or worker (Celery's Django fix-up runs the checks just before it
    imports the task modules), stop with the error's one line, not the import's traceback."""
    process = startup.starting_process()
    if process is not None and getattr(app.loader, "worker_initialized", False):
        startup.refuse_to_import(process, error, exc)


def _declared_on(exc: BaseException) -> str:
    """`` on task `name` `` : the function the failing ``@scheduled(...)`` decorates, read
    from the lines below it (the decorator fails before it is given the function)."""
    frame = _user_frame(exc)
    if frame is None or frame.lineno is None:
        return ""
    first = linecache.getline(frame.filename, frame.lineno)
    indent = len(first) - len(first.lstrip())
    for number in range(frame.lineno, frame.lineno + 40):
        line = linecache.getline(frame.filename, number)
        found = DEFINITION.match(line)
        if found:
            return f" on task function {found.group(1)!r}"
        outside = line.strip() and len(line) - len(line.lstrip()) <= indent
        if number > frame.lineno and outside and not line.lstrip().startswith(("@", ")")):
            return ""  # not a decorator: a call in a function body, say
    return ""


def _where(exc: BaseException) -> str:
    """``file:line`` of the deepest frame outside this package: the user's module."""
    frame = _user_frame(exc)
    return f"{frame.filename}:{frame.lineno}" if frame else "an unknown place"


def _user_frame(exc: BaseException) -> traceback.FrameSummary | None:
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not frame.filename.startswith(("<", str(PACKAGE_DIR)))
    ]
    return frames[-1] if frames else None


def acks_late_warnings(conf: Any) -> list[checks.CheckMessage]:
    """W002 when workers ack before running or keep a message a dying worker held."""
    missing = [
        name
        for name, key in (
            ("CELERY_TASK_ACKS_LATE", "task_acks_late"),
            ("CELERY_TASK_REJECT_ON_WORKER_LOST", "task_reject_on_worker_lost"),
        )
        if not conf.get(key)
    ]
    if not missing:
        return []
    return [
        checks.Warning(
            f"{' and '.join(missing)} not set: a worker killed in the middle of a scheduled "
            "task loses its message, and the run waits for the reconciler "
            "(SCHEDULER_DISPATCH_TIMEOUT) instead of being redelivered",
            hint="set " + " and ".join(f"{name} = True" for name in missing) + " in settings "
            "(docs/deployment.md)",
            id="scheduler_app.W002",
        )
    ]


@checks.register(TAG)
def partition_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    current = get_settings()
    return partition_errors(current.PARTITION_INTERVAL, current.PARTITIONS_AHEAD)


def partition_errors(interval: object, ahead: object) -> list[checks.CheckMessage]:
    """E007 when the partition settings cannot be used (the beat would never create any)."""
    messages: list[checks.CheckMessage] = []
    choices = ", ".join(repr(str(member)) for member in Interval)
    if interval not in set(Interval):
        messages.append(
            checks.Error(
                f"SCHEDULER_PARTITION_INTERVAL is {interval!r}, not one of {choices}",
                hint="set it to 'month' (the default), 'week' or 'day'",
                id="scheduler_app.E007",
            )
        )
    if not whole(ahead, 0, 1000):
        messages.append(
            checks.Error(
                f"SCHEDULER_PARTITIONS_AHEAD is {ahead!r}, not a whole number from 0 to 1000",
                hint="set it to how many periods after the current one get partitions (3)",
                id="scheduler_app.E007",
            )
        )
    return messages


@checks.register(checks.Tags.security)
def secret_key(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """E003, except under Django's test runner: it turns DEBUG off itself (``manage.py test``
    in a new project would otherwise fail on startproject's key); its test environment is
    the one that gives ``django.core.mail`` an ``outbox``."""
    if hasattr(mail, "outbox"):
        return []
    return secret_key_errors(getattr(settings, "SECRET_KEY", ""), settings.DEBUG)


def secret_key_errors(key: str, debug: bool) -> list[checks.CheckMessage]:
    """E003 outside DEBUG when the secret key is a published one: anyone could sign sessions,
    password-reset links and admin cookies for this site."""
    if debug or not (key in INSECURE_KEYS or key.startswith(INSECURE_PREFIX)):
        return []
    return [
        checks.Error(
            "SECRET_KEY is a development key known to others while DEBUG is off",
            hint="set a long random SECRET_KEY from the environment, e.g. "
            'python -c "import secrets; print(secrets.token_urlsafe(50))" into '
            "DJANGO_SECRET_KEY",
            id="scheduler_app.E003",
        )
    ]
