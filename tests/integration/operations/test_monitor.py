"""The expected-run monitor: fires and clears, sends each signal once, says it in business words."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import DatabaseError
from django.utils import timezone

from scheduler_app import events
from scheduler_app.clock import FakeClock
from scheduler_app.models import Schedule, ScheduleHealth
from scheduler_app.monitoring.monitor import run_monitor
from tests.integration.operations.helpers import finish, run_due
from tests.integration.support import START, MemoryPublisher, reload, schedule, ticker

pytestmark = pytest.mark.django_db
HOUR = timedelta(hours=1)


@pytest.fixture
def signals() -> Any:
    sent: list[tuple[str, str]] = []

    def unhealthy(sender: Any, schedule: Schedule, reason: str, **_: Any) -> None:
        sent.append(("unhealthy", reason))

    def recovered(sender: Any, schedule: Schedule, **_: Any) -> None:
        sent.append(("recovered", str(schedule.pk)))

    events.schedule_unhealthy.connect(unhealthy)
    events.schedule_recovered.connect(recovered)
    yield sent
    events.schedule_unhealthy.disconnect(unhealthy)
    events.schedule_recovered.disconnect(recovered)


def daily_report(clock: FakeClock) -> Schedule:
    return schedule(
        clock, name="daily-report", kind="cron", rule="0 9 * * *", expected_every=26 * 3600
    )


def test_no_success_within_expected_every_fires_once_and_clears_once(signals: list) -> None:
    clock = FakeClock(START)  # Monday 00:00:10 UTC
    report = daily_report(clock)
    clock.set(START + timedelta(hours=9))
    [first] = run_due(report, clock)
    finish(first, "failed", clock.now() + timedelta(minutes=5), "Traceback ...\nTimeoutError")
    assert run_monitor(clock.now()).ok  # inside the first window: nothing to say
    clock.set(START + timedelta(hours=27))
    result = run_monitor(clock.now())
    [problem] = result.problems
    assert problem.kind == "no_success"
    assert problem.message == (
        "daily-report: no successful run yet (27 h since it was created), expected "
        "within 26 h; last attempt 2026-01-05 09:00 UTC failed: TimeoutError"
    )
    assert reload(report).health == ScheduleHealth.UNHEALTHY
    run_monitor(clock.now() + timedelta(minutes=1))  # still unhealthy: no second signal
    assert [kind for kind, _ in signals] == ["unhealthy"]
    assert signals[0][1] == problem.message
    clock.set(START + timedelta(days=1, hours=9))
    second = run_due(report, clock)[-1]
    finish(second, "succeeded", clock.now() + timedelta(minutes=1))
    result = run_monitor(clock.now() + timedelta(minutes=2))
    assert result.ok and result.recovered == [str(report.pk)]
    run_monitor(clock.now() + timedelta(minutes=3))
    assert [kind for kind, _ in signals] == ["unhealthy", "recovered"]
    assert reload(report).health == ScheduleHealth.OK


def test_the_message_counts_from_the_last_success(signals: list) -> None:
    clock = FakeClock(START)
    report = daily_report(clock)
    clock.set(START + timedelta(hours=9))
    [first] = run_due(report, clock)
    finish(first, "succeeded", clock.now() + timedelta(minutes=1))
    clock.set(START + timedelta(days=1, hours=9))
    second = run_due(report, clock)[-1]
    finish(second, "failed", clock.now() + timedelta(minutes=1), "ConnectionError: db down")
    clock.set(START + timedelta(days=1, hours=12, minutes=1))
    [problem] = run_monitor(clock.now()).problems
    assert problem.message == (
        "daily-report: no successful run for 27 h, expected within 26 h; "
        "last attempt 2026-01-06 09:00 UTC failed: ConnectionError: db down"
    )


def test_an_overdue_schedule_is_reported_and_recovers_when_a_beat_catches_up(
    signals: list,
) -> None:
    clock = FakeClock(START)
    target = schedule(clock, name="hourly-sync", kind="cron", rule="0 * * * *", max_lateness=60)
    clock.set(START + timedelta(hours=3))  # due at 01:00, no beat ran since
    result = run_monitor(clock.now(), margin=60)
    [problem] = result.problems
    assert problem.kind == "overdue"
    assert problem.message.startswith(
        "hourly-sync: overdue by 2 h: its run due 2026-01-05 01:00 UTC was not started"
    )
    assert reload(target).health_reason == problem.message
    ticker(MemoryPublisher(), clock, MONITOR_INTERVAL=60.0).tick()  # the beat runs the monitor
    assert reload(target).health == ScheduleHealth.OK
    assert [kind for kind, _ in signals] == ["unhealthy", "recovered"]


def test_within_max_lateness_and_margin_is_not_overdue() -> None:
    clock = FakeClock(START)
    schedule(clock, kind="cron", rule="0 * * * *", max_lateness=300)
    assert run_monitor(START + timedelta(minutes=59, seconds=50) + timedelta(seconds=360)).ok
    assert not run_monitor(START + HOUR + timedelta(seconds=361), margin=60).ok


def test_paused_schedules_are_not_reported_and_an_unhealthy_one_recovers_when_paused(
    signals: list,
) -> None:
    from scheduler_app.services import pause_schedule

    clock = FakeClock(START)
    target = schedule(clock, kind="cron", rule="0 * * * *")
    run_monitor(START + timedelta(hours=3))
    pause_schedule(target.pk, clock=clock)
    assert run_monitor(START + timedelta(hours=4)).ok
    assert [kind for kind, _ in signals] == ["unhealthy", "recovered"]


def call(*args: str) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("check_schedules", *args, stdout=out, stderr=err)
    except SystemExit as exit:
        return int(exit.code or 0), out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


def beat_ticks_now() -> None:
    ticker(MemoryPublisher(), FakeClock(timezone.now()), MONITOR_INTERVAL=3600.0).tick()


def test_check_schedules_exit_codes_and_json() -> None:
    beat_ticks_now()
    code, out, _ = call()
    assert code == 0 and out.startswith("ok: every schedule runs as expected")
    now = timezone.now()
    clock = FakeClock(now - timedelta(hours=30))
    schedule(clock, name="daily-report", kind="interval", rule="1d", expected_every=26 * 3600)
    Schedule.objects.update(next_run_at=now + HOUR)  # on time, but never succeeded
    code, out, _ = call()
    assert code == 1
    assert out.startswith("daily-report: no successful run yet (30 h since it was created")
    code, out, _ = call("--json")
    document = json.loads(out)
    assert code == 1 and document["ok"] is False and document["beat"]["ok"] is True
    assert [p["kind"] for p in document["problems"]] == ["no_success"]


def test_check_schedules_reports_a_stopped_beat_and_exits_2_without_a_database(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, out, _ = call()
    assert code == 1 and out.startswith("beat: no beat has ever ticked")

    def broken(*args: Any, **kwargs: Any) -> None:
        raise DatabaseError("connection refused")

    monkeypatch.setattr("scheduler_app.management.commands.check_schedules.run_monitor", broken)
    code, _, err = call()
    assert code == 2 and "could not check the schedules: DatabaseError: connection refused" in err


def test_a_pass_is_four_queries_when_nothing_changes() -> None:
    """One per kind of candidate (each on its own index), one to read them."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    clock = FakeClock(START)
    for hour in range(5):
        schedule(clock, kind="cron", rule=f"0 {hour + 1} * * *", expected_every=86400)
    run_monitor(START + timedelta(hours=3))  # two overdue: flagged (writes)
    with CaptureQueriesContext(connection) as captured:
        result = run_monitor(START + timedelta(hours=3, minutes=1))
    assert len(result.problems) == 2 and not result.became_unhealthy
    assert len(captured.captured_queries) == 4


@pytest.mark.postgres
def test_each_kind_of_candidate_is_found_on_an_index() -> None:
    """Not a scan of every schedule: the beat runs a pass every ``MONITOR_INTERVAL``."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    clock = FakeClock(START)
    schedule(clock, kind="cron", rule="0 1 * * *", expected_every=86400)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a tiny table: ask for the plan
    with CaptureQueriesContext(connection) as captured:
        run_monitor(START + timedelta(hours=3))
    finds = [query["sql"] for query in captured.captured_queries[:3]]
    with connection.cursor() as cursor:
        for sql in finds:
            cursor.execute(f"EXPLAIN {sql}")
            plan = " ".join(row[0] for row in cursor.fetchall())
            assert "Seq Scan on scheduler_app_schedule" not in plan, (sql, plan)
            assert any(
                name in plan
                for name in ("sched_due_idx", "sched_expected_idx", "sched_unhealthy_idx")
            ), plan
