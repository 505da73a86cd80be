"""The Celery Beat scheduler class.

Run it with ``celery -A <your app> beat -S scheduler_app.beat:DurableScheduler``.

Nothing is loaded into memory: every tick asks the database what is due. The beat refuses to
start, with one line that says to run ``migrate``, when the scheduler's tables are missing,
and waits with growing pauses (not a traceback per second) while the database is down.
"""

from __future__ import annotations

import contextlib
import logging
import pkgutil
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from celery.backends.base import DisabledBackend
from celery.beat import Scheduler
from django.db import DatabaseError, close_old_connections, connection

from scheduler_app import migrations
from scheduler_app.authoring.sync import sync_schedules
from scheduler_app.checks import startup
from scheduler_app.conf import get_settings
from scheduler_app.db import connections
from scheduler_app.djtasks.publisher import DjangoTasksPublisher
from scheduler_app.handoff import djtasks_compat as djtasks
from scheduler_app.handoff.router import TargetRouter
from scheduler_app.models import HandoffTarget
from scheduler_app.publishing import CeleryPublisher
from scheduler_app.ticker import Ticker

logger = logging.getLogger("scheduler_app.beat")

BACKOFF_FIRST = 1.0
BACKOFF_MAX = 30.0
"""Pauses while the database is unreachable: 1, 2, 4, ... seconds, at most 30."""
RESULTS_CLEANUP_FIRST = timedelta(minutes=5)
RESULTS_CLEANUP_EVERY = timedelta(days=1)
"""Expired task results (``result_expires``) are deleted 5 minutes after the beat starts, then
daily: the job Celery's own beat does with its ``celery.backend_cleanup`` entry, which a
database-driven scheduler does not install."""
EXIT_NOT_MIGRATED = 78
"""Exit status when the tables are missing (sysexits' EX_CONFIG: a supervisor should not
restart the beat in a loop; someone has to run ``migrate``)."""


_waiting = False


class NotMigrated(SystemExit):
    """The scheduler's migrations are not applied: the beat stops with one line."""


def backoff(failures: int) -> float:
    """Seconds to wait after ``failures`` consecutive failed attempts (1, 2, 4, ... 30)."""
    return float(min(BACKOFF_FIRST * 2 ** max(failures - 1, 0), BACKOFF_MAX))


class Failures:
    """A loop's consecutive failed steps (``run_scheduler``'s ticks, ``run_event_deliveries``'
    rounds): each is logged, with its traceback the first time, and answered with a growing
    pause (``backoff``); a database error also drops the connection for a fresh one."""

    def __init__(self, log: logging.Logger, what: str, action: str) -> None:
        self.log = log
        self.what = what
        self.action = action
        self.count = 0

    def failed(self, exc: Exception) -> float:
        """Seconds to pause after this failure."""
        self.count += 1
        delay = backoff(self.count)
        self.log.warning(
            "%s failed (%s: %s); retrying in %g s",
            self.what,
            type(exc).__name__,
            exc,
            delay,
            exc_info=self.count == 1,
            extra={"action": self.action, "attempt": self.count},
        )
        if isinstance(exc, DatabaseError):
            connection.close()
        return delay

    def passed(self) -> None:
        self.count = 0


def unapplied_migrations() -> list[str]:
    """``app.name`` of every migration the scheduler's tables need and the database lacks.

    Raises ``DatabaseError`` when the database cannot be reached. The usual case, every
    migration file of the app recorded as applied, is answered from the migration table and
    the file names alone (building Django's migration graph imports every migration of every
    app: most of a beat's start-up); anything else takes Django's full plan.
    """
    from django.db.migrations.executor import MigrationExecutor
    from django.db.migrations.recorder import MigrationRecorder

    applied = MigrationRecorder(connection).applied_migrations()
    if all(("scheduler_app", name) in applied for name in _migration_files()):
        return []
    executor = MigrationExecutor(connection)
    targets = [node for node in executor.loader.graph.leaf_nodes() if node[0] == "scheduler_app"]
    return [
        f"{migration.app_label}.{migration.name}"
        for migration, _ in executor.migration_plan(targets)
    ]


def _migration_files() -> list[str]:
    """The names of the app's migration modules, without importing them."""
    return [
        module.name
        for module in pkgutil.iter_modules(migrations.__path__)
        if not module.name.startswith("_") and not module.ispkg
    ]


class DurableScheduler(Scheduler):
    """Materializes due slots into occurrences and hands them to Celery through the outbox."""

    def __init__(
        self,
        *args: Any,
        ticker: Ticker | None = None,
        sleep: Callable[[float], None] = time.sleep,
        **kwargs: Any,
    ) -> None:
        self._ticker = ticker
        self._sleep = sleep
        self._db_failures = 0
        self._tick_failures = 0
        self._next_cleanup: datetime | None = None
        super().__init__(*args, **kwargs)
        # Beat's banner prints this: the longest sleep between ticks is the scheduler's own
        # setting (``tick`` returns its sleep), not beat's 300 s default.
        self.max_interval = self.real_max_interval()  # type: ignore[assignment]

    def real_max_interval(self) -> float:
        settings = self._ticker.settings if self._ticker is not None else get_settings()
        return settings.MAX_INTERVAL

    @property
    def ticker(self) -> Ticker:
        if self._ticker is None:
            self._ticker = Ticker(handoff_targets(self.app))
        return self._ticker

    def setup_schedule(self) -> None:
        self.max_interval = self.real_max_interval()  # type: ignore[assignment]
        self.wait_for_database()
        # The start-up checks, before "ready" (Celery sends ``beat_init`` only after this).
        startup.check_starting_beat(self)
        if self.ticker.settings.SYNC_ON_BEAT_START:
            self.sync_declared()
        logger.info(
            "durable scheduler ready, ticking at least every %g s",
            self.max_interval,
            extra={"action": "beat.start", "owner": self.ticker.owner},
        )

    def wait_for_database(self) -> None:
        """Return once the database answers and is migrated; stop the beat when it is not
        migrated; wait with growing pauses while it does not answer."""
        global _waiting
        if _waiting:
            # Beat's SIGTERM handler builds a second scheduler to close it while the first is
            # still waiting here: stop instead of waiting again inside the handler.
            raise SystemExit(0)
        _waiting = True
        try:
            missing = self._migration_state()
        finally:
            _waiting = False
        if missing:
            logger.critical(
                "the scheduler's tables are not migrated (%d migration(s) missing, first %s): "
                "run `python manage.py migrate`, then start the beat again",
                len(missing),
                missing[0],
                extra={"action": "beat.not_migrated"},
            )
            raise NotMigrated(EXIT_NOT_MIGRATED)

    def _migration_state(self) -> list[str]:
        failures = 0
        while True:
            try:
                return unapplied_migrations()
            except DatabaseError as exc:
                failures += 1
                delay = backoff(failures)
                logger.warning(
                    "database unavailable (%s); retrying in %g s",
                    _one_line(exc),
                    delay,
                    extra={"action": "beat.db_unavailable", "attempt": failures},
                )
                connection.close()
                self._sleep(delay)

    def sync_declared(self) -> None:
        """Write the ``@scheduled`` declarations to the database; a failure is logged and
        the beat starts anyway, with the schedules already stored."""
        try:
            report = sync_schedules(app=self.app)
        except Exception:  # a task module that fails to import must not keep the beat down
            logger.exception(
                "syncing the @scheduled declarations failed; running the stored schedules",
                extra={"action": "beat.sync_failed"},
            )
            close_old_connections()
            return
        if not report.ok:
            logger.error(
                "%d @scheduled declaration(s) could not be synced: %s",
                len(report.errors),
                "; ".join(f"{entry.key}: {entry.detail}" for entry in report.errors),
                extra={"action": "beat.sync_failed"},
            )

    def tick(self, *args: Any, **kwargs: Any) -> float:
        # Django's close_old_connections, minus the health check's SELECT 1 when the last tick
        # used the connection less than a second ago (an idle tick is then one round trip).
        connections.close_old()
        started = time.monotonic()
        try:
            result = self.ticker.tick()
        except DatabaseError as exc:
            # The database went away (restart, network): nothing is lost, a later tick
            # reconnects and carries on from the stored state. One line per attempt, with
            # growing pauses; the traceback only once, at the first failure.
            self._db_failures += 1
            delay = backoff(self._db_failures)
            logger.warning(
                "tick failed: database unavailable (%s); retrying in %g s",
                _one_line(exc),
                delay,
                exc_info=self._db_failures == 1,
                extra={"action": "beat.tick_failed", "attempt": self._db_failures},
            )
            connection.close()
            return delay
        except Exception as exc:
            # Anything else a tick raised (a bug, a row no check foresaw): the beat must not
            # exit, or no tenant's work is published. Logged once with its traceback, then one
            # line per repeat, with the same growing pauses.
            self._tick_failures += 1
            delay = backoff(self._tick_failures)
            logger.error(
                "tick failed: %s; retrying in %g s",
                _one_line(exc),
                delay,
                exc_info=self._tick_failures == 1,
                extra={"action": "beat.tick_error", "attempt": self._tick_failures},
            )
            return delay
        connections.mark_used()
        self.ticker.settle()  # once: the start-up is done
        self._tick_failures = 0
        if self._db_failures:
            logger.info(
                "database reachable again after %d failed tick(s)",
                self._db_failures,
                extra={"action": "beat.db_recovered"},
            )
            self._db_failures = 0
        self.maybe_cleanup_results()
        if result.created or result.published:
            logger.info(
                "tick",
                extra={
                    "action": "beat.tick",
                    "occurrences_created": result.created,
                    "published": result.published,
                    "duration_ms": round((time.monotonic() - started) * 1000),
                },
            )
        return result.sleep

    def maybe_cleanup_results(self) -> bool:
        """Delete expired task results (e.g. django-celery-results rows, which copy each
        run's kwargs) when ``result_expires`` is set and the backend does not expire them by
        itself. Returns whether a cleanup ran."""
        backend = self.app.backend
        if (
            not self.app.conf.result_expires
            or isinstance(backend, DisabledBackend)  # no result backend: nothing to delete
            or getattr(backend, "supports_autoexpire", True)
        ):
            return False
        now = self.ticker.clock.now()
        if self._next_cleanup is None:
            self._next_cleanup = now + RESULTS_CLEANUP_FIRST
        if now < self._next_cleanup:
            return False
        self._next_cleanup = now + RESULTS_CLEANUP_EVERY
        try:
            backend.cleanup()
        except Exception as exc:  # a failed cleanup must not stop the scheduling
            logger.warning(
                "deleting expired task results failed (%s); next try in a day",
                _one_line(exc),
                extra={"action": "beat.results_cleanup_failed"},
            )
            return False
        logger.info(
            "expired task results deleted (older than %s)",
            self.app.conf.result_expires,
            extra={"action": "beat.results_cleanup"},
        )
        return True

    def sync(self) -> None:
        """Nothing to sync: the database is the schedule."""

    def close(self) -> None:
        # Shutting down while the database is away: the lease simply expires.
        with contextlib.suppress(DatabaseError):
            self.ticker.release_lease()
        super().close()

    @property
    def info(self) -> str:
        return f"    . durable scheduler (owner {self.ticker.owner})"


def handoff_targets(app: Any) -> TargetRouter:
    """The beat hands off both targets: Celery's, and django.tasks' when it is installed."""
    adapters: dict[str, Any] = {HandoffTarget.CELERY: CeleryPublisher(app)}
    if djtasks.AVAILABLE:
        adapters[HandoffTarget.DJANGO_TASKS] = DjangoTasksPublisher()
    return TargetRouter(adapters)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."
