"""@scheduled's contract options (lateness_class, job_type, payload_ref), the schedulable
mark, code_location, and the allowlist at sync; the job-type registry."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery, Task, shared_task
from celery.exceptions import DuplicateTaskNameWarning

from project.celery import app as celery_app
from project.demo.tasks import ping, record_context
from scheduler_app.authoring import jobtypes
from scheduler_app.authoring.declarations import ScheduleRegistry, isolated_registry, scheduled
from scheduler_app.authoring.sync import SyncReport, sync_schedules
from scheduler_app.clock import FakeClock
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.handoff.allowlist import check_target
from scheduler_app.models import Schedule
from scheduler_app.policies.lateness import CLASS_DEFAULTS
from tests.integration.support import START

pytestmark = pytest.mark.django_db
HERE = (
    str(Path(__file__).relative_to(Path.cwd()))
    if Path(__file__).is_relative_to(Path.cwd())
    else __file__
)
"""How the declaration's file is recorded: relative to the working directory when below it."""


@pytest.fixture
def declared() -> Iterator[ScheduleRegistry]:
    celery_app.loader.import_default_modules()
    with isolated_registry() as fresh:
        yield fresh


def sync(registry: ScheduleRegistry, clock: FakeClock | None = None) -> SyncReport:
    return sync_schedules(clock=clock or FakeClock(START), declarations=registry)


def actions(report: SyncReport) -> dict[str, str]:
    return {entry.key: entry.action for entry in report.entries}


# -- lateness classes -------------------------------------------------------------------------


def test_a_lateness_class_sets_its_defaults_and_explicit_values_win(
    declared: ScheduleRegistry,
) -> None:
    scheduled(cron="0 8 * * *", objective="remind", lateness_class="human_reminder")(ping)
    scheduled(cron="0 9 * * *", objective="batch", lateness_class="BUSINESS_BATCH", deadline="2h")(
        ping
    )
    assert sync(declared).ok
    remind = Schedule.objects.get(key="demo.ping:remind")
    assert (remind.lateness_class, remind.max_lateness, remind.misfire_policy, remind.deadline) == (
        "human_reminder",
        *CLASS_DEFAULTS["human_reminder"].values(),
    )
    batch = Schedule.objects.get(key="demo.ping:batch")
    assert (batch.lateness_class, batch.misfire_policy, batch.deadline) == (
        "business_batch",
        "catch_up",
        7200,
    )
    assert actions(sync(declared)) == {
        "demo.ping:batch": "unchanged",
        "demo.ping:remind": "unchanged",
    }


def test_changing_the_class_keeps_explicitly_declared_policies() -> None:
    clock = FakeClock(START)
    with isolated_registry() as before:
        scheduled(cron="0 8 * * *", misfire="catch_up")(ping)
    with isolated_registry() as after:
        scheduled(cron="0 8 * * *", misfire="catch_up", lateness_class="maintenance")(ping)
    sync(before, clock)
    [entry] = sync(after, clock).entries
    row = Schedule.objects.get(key="demo.ping:default")
    assert (entry.action, row.version, row.lateness_class) == ("update", 2, "maintenance")
    assert (row.misfire_policy, row.max_lateness, row.deadline) == ("catch_up", 3600, 21600)


def test_real_time_is_refused_when_the_module_is_imported() -> None:
    with pytest.raises(ScheduleValidationError) as error:
        scheduled(cron="0 8 * * *", lateness_class="real_time")
    assert error.value.field == "lateness_class"
    assert "use a dedicated real-time system" in error.value.message
    with pytest.raises(ScheduleValidationError, match="unknown lateness class 'urgent'"):
        scheduled(cron="0 8 * * *", lateness_class="urgent")


# -- job types and payload references ---------------------------------------------------------


def test_a_declared_job_type_and_payload_ref_are_stored_and_resolve(
    declared: ScheduleRegistry,
) -> None:
    scheduled(cron="0 9 * * *", job_type="source.sync", payload_ref="state://sync-source-42")(
        record_context
    )
    assert jobtypes.resolve("source.sync") == "demo.record_context"
    assert sync(declared).ok
    row = Schedule.objects.get(key="demo.record_context:default")
    assert (row.task, row.job_type, row.payload_ref) == (
        "demo.record_context",
        "source.sync",
        "state://sync-source-42",
    )


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"job_type": " spaced "}, "job_type"),
        ({"job_type": ""}, "job_type"),
        ({"payload_ref": "line\nbreak"}, "payload_ref"),
        ({"payload_ref": "x" * 501}, "payload_ref"),
    ],
)
def test_bad_job_types_and_payload_refs_are_refused_at_import(
    options: dict[str, Any], field: str
) -> None:
    with pytest.raises(ScheduleValidationError) as error:
        scheduled(cron="0 8 * * *", **options)
    assert error.value.field == field


def test_the_setting_wins_over_code_and_ambiguity_is_an_error(
    declared: ScheduleRegistry, settings: Any
) -> None:
    scheduled(cron="0 9 * * *", objective="a", job_type="source.sync")(ping)
    scheduled(cron="0 9 * * *", objective="b", job_type="source.sync")(record_context)
    with pytest.raises(ScheduleValidationError) as error:
        jobtypes.resolve("source.sync")
    assert error.value.code == "ambiguous_job_type"
    assert "demo.ping, demo.record_context" in error.value.message
    settings.SCHEDULER_JOB_TYPES = {"source.sync": "demo.ping", "mail.send": "demo.digest"}
    assert jobtypes.resolve("source.sync") == "demo.ping"
    assert jobtypes.job_types() == {"mail.send": "demo.digest", "source.sync": "demo.ping"}


def test_a_task_option_declares_a_job_type_and_unknown_ones_list_the_known() -> None:
    @celery_app.task(name="tests.job_served", job_type="report.build", lazy=False)
    def served() -> None: ...

    try:
        assert jobtypes.resolve("report.build") == "tests.job_served"
        with pytest.raises(ScheduleValidationError) as error:
            jobtypes.resolve("report.biuld")
        assert error.value.code == "unknown_job_type"
        assert "(known: report.build)" in error.value.message
        assert "SCHEDULER_JOB_TYPES" in error.value.message
    finally:
        celery_app.tasks.unregister("tests.job_served")


# -- the schedulable mark and the allowlist at sync ---------------------------------------------


def test_decorated_tasks_are_schedulable_without_the_setting(
    declared: ScheduleRegistry, settings: Any
) -> None:
    settings.SCHEDULER_ALLOWED_TASKS = ()

    @celery_app.task(name="tests.undeclared", lazy=False)
    def undeclared() -> None: ...

    @scheduled(cron="0 8 * * *")
    @celery_app.task(name="tests.declared", lazy=False)
    def declared_task() -> None: ...

    try:
        check_target("tests.declared")
        with pytest.raises(ScheduleValidationError, match="is not schedulable"):
            check_target("tests.undeclared")
        assert actions(sync(declared)) == {"tests.declared:default": "create"}
    finally:
        celery_app.tasks.unregister("tests.declared")
        celery_app.tasks.unregister("tests.undeclared")


def test_lazy_tasks_are_marked_when_their_app_builds_them() -> None:
    lazy_app = Celery("mark-test", set_as_current=False)
    with isolated_registry():

        @scheduled(cron="0 8 * * *")
        @lazy_app.task(name="lazy.marked")
        def marked() -> None: ...

        @scheduled(cron="0 9 * * *")
        @shared_task(name="shared.marked")
        def shared_marked() -> None: ...

    assert not lazy_app.finalized
    with warnings.catch_warnings():
        # Finalizing a new app attaches every shared task the suite defined so far (the docs'
        # examples among them), whose names may repeat: not what this test is about.
        warnings.simplefilter("ignore", DuplicateTaskNameWarning)
        lazy_app.finalize()
    assert lazy_app.tasks["lazy.marked"].schedulable is True
    assert lazy_app.tasks["shared.marked"].schedulable is True


def test_sync_refuses_what_the_allowlist_refuses(declared: ScheduleRegistry) -> None:
    @scheduled(cron="0 8 * * *")
    @celery_app.task(name="tests.plain_base", base=Task, lazy=False)
    def plain() -> None: ...

    scheduled(cron="0 9 * * *")(celery_app.tasks["celery.backend_cleanup"])
    try:
        report = sync(declared)
    finally:
        celery_app.tasks.unregister("tests.plain_base")
    details = {entry.key: (entry.action, entry.detail) for entry in report.entries}
    assert details["tests.plain_base:default"][0] == "error"
    assert "OccurrenceTask" in details["tests.plain_base:default"][1]
    assert details["celery.backend_cleanup:default"][0] == "error"
    assert "can never be scheduled" in details["celery.backend_cleanup:default"][1]
    assert not Schedule.objects.exists()


# -- code_location ---------------------------------------------------------------------------


def test_the_declaration_site_is_recorded_and_follows_the_code(declared: ScheduleRegistry) -> None:
    line = declare_here()
    sync(declared)
    row = Schedule.objects.get(key="demo.ping:default")
    assert row.code_location == f"{HERE}:{line}"
    with isolated_registry() as moved:
        line = declare_here(offset=True)
    [entry] = sync(moved).entries
    row = Schedule.objects.get(key="demo.ping:default")
    assert (entry.action, row.version, row.code_location) == ("unchanged", 1, f"{HERE}:{line}")


def declare_here(*, offset: bool = False) -> int:
    import inspect

    if offset:
        scheduled(cron="0 8 * * *")(ping)
        return inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]
    scheduled(cron="0 8 * * *")(ping)
    return inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]


def test_code_schedules_moved_by_export_and_import_stay_the_code_s(
    declared: ScheduleRegistry,
) -> None:
    """Another environment's sync recognises imported code schedules (origin is carried)."""
    from scheduler_app.contract import export_all, import_text
    from scheduler_app.models import ScheduleVersion

    clock = FakeClock(START)
    scheduled(cron="0 8 * * *", lateness_class="maintenance")(ping)
    sync(declared, clock)
    exported = export_all(style="spec")
    ScheduleVersion.objects.all().delete()
    Schedule.objects.all().delete()
    import_text(exported, clock=clock)
    assert Schedule.objects.get().origin == "code"
    assert actions(sync(declared, clock)) == {"demo.ping:default": "unchanged"}


@pytest.mark.parametrize("setting", [["source.sync"], {"source.sync": 3}, {"": "demo.ping"}])
def test_a_malformed_job_type_setting_is_refused_loudly(settings: Any, setting: Any) -> None:
    settings.SCHEDULER_JOB_TYPES = setting
    with pytest.raises(ScheduleValidationError, match="SCHEDULER_JOB_TYPES must be a dict"):
        jobtypes.resolve("source.sync")
