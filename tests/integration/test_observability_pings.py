"""Healthchecks-style pings: the field through every surface, the pings a run sends (after
commit, off the task's thread), the address check at request time, a hanging ping server,
the beat's own ping."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from django.urls import reverse

from project.demo.tasks import ping
from scheduler_app import api, services
from scheduler_app.clock import FakeClock
from scheduler_app.declarations import scheduled
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import Schedule
from scheduler_app.observability import pings
from scheduler_app.observability.checks import check_observability
from tests.integration.admin.support import client_for
from tests.integration.observability_support import (
    PingServer,
    committed,
    hanging_server,
    ping_server,
)
from tests.integration.support import START, MemoryPublisher, admin_form, schedule, ticker
from tests.integration.worker_support import due_one, flaky, invalid, run

pytestmark = pytest.mark.django_db
__all__ = ["committed", "hanging_server", "ping_server"]  # fixtures

TIMEOUT = 0.5
LOCAL = override_settings(
    SCHEDULER_PING_ALLOWED_HOSTS=("127.0.0.1",), SCHEDULER_PING_TIMEOUT=TIMEOUT
)


def sent() -> None:
    assert pings.sender.wait(10), "the ping threads did not finish"


# -- the field ------------------------------------------------------------------------------


def test_the_service_refuses_a_bad_ping_url_by_field() -> None:
    clock = FakeClock(START)
    with pytest.raises(ScheduleValidationError) as raised:
        schedule(clock, kind="interval", rule="60s", ping_url="ftp://example.com/x")
    assert (raised.value.field, raised.value.code) == ("ping_url", "invalid_scheme")
    with pytest.raises(ScheduleValidationError, match="credentials"):
        schedule(clock, kind="interval", rule="60s", ping_url="https://u:p@hc-ping.com/x")
    with override_settings(SCHEDULER_PING_ALLOW_CREDENTIALS=True):
        assert schedule(clock, kind="interval", rule="60s", ping_url="https://u:p@hc-ping.com/x")


def test_the_field_is_versioned_and_editable() -> None:
    clock = FakeClock(START)
    created = schedule(clock, kind="interval", rule="60s", ping_url="https://hc-ping.com/a")
    edited = services.update_schedule(
        created.pk, ping_url="https://hc-ping.com/b", clock=clock, expected_version=1
    )
    assert (edited.ping_url, edited.version) == ("https://hc-ping.com/b", 2)


def test_the_api_and_the_decorator_take_it() -> None:
    clock = FakeClock(START)
    one = api.run_in("demo.ping", "20m", clock=clock, ping_url="https://hc-ping.com/once")
    assert one.ping_url == "https://hc-ping.com/once"
    with pytest.raises(ScheduleValidationError, match="http:// or https://"):
        scheduled(cron="0 9 * * *", ping_url="gopher://example.com/")


def test_the_admin_form_shows_a_bad_ping_url_as_a_field_error() -> None:
    admin = client_for(User.objects.create_superuser("admin", "admin@example.com", "pw"))
    add = reverse("admin:scheduler_app_schedule_add")
    response = admin.post(add, admin_form(ping_url="http://u:p@hc-ping.com/x"))
    errors = response.context["adminform"].form.errors
    assert "credentials" in str(errors["ping_url"])
    admin.post(add, admin_form(ping_url="https://hc-ping.com/ok"))
    assert Schedule.objects.get().ping_url == "https://hc-ping.com/ok"


# -- what a run sends -----------------------------------------------------------------------


@LOCAL
@pytest.mark.parametrize(
    ("task", "extra", "state", "paths"),
    [
        (ping, {}, "SUCCESS", ["/p/start", "/p"]),
        (invalid, {}, "FAILURE", ["/p/start", "/p/fail"]),  # a permanent error: the last attempt
        (flaky, {"succeed_on": 2}, "IGNORED", ["/p/start"]),  # retrying: no /fail yet
    ],
    ids=["success", "terminal-failure", "retrying"],
)
def test_what_a_run_pings(
    ping_server: PingServer,
    committed: Any,
    task: Any,
    extra: dict[str, Any],
    state: str,
    paths: list[str],
) -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, task=task.name, ping_url=f"{ping_server.url}/p")
    assert committed(run, task, occurrence, clock, **extra).state == state
    sent()
    assert ping_server.paths == paths


@LOCAL
def test_nothing_is_sent_before_the_commit(ping_server: PingServer) -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, ping_url=f"{ping_server.url}/p")
    run(ping, occurrence, clock)  # the test's transaction never commits
    sent()
    assert ping_server.paths == []


@override_settings(SCHEDULER_PING_TIMEOUT=TIMEOUT)
def test_a_loopback_host_not_allowed_is_refused_when_sent(
    ping_server: PingServer, committed: Any, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, ping_url=f"{ping_server.url}/p")  # stored: it is a valid URL
    with caplog.at_level(logging.WARNING, logger="scheduler_app.pings"):
        assert committed(run, ping, occurrence, clock).state == "SUCCESS"
        sent()
    assert ping_server.paths == []
    refused = [r for r in caplog.records if getattr(r, "action", "") == "ping.refused"]
    assert len(refused) == 2 and "SCHEDULER_PING_ALLOWED_HOSTS" in refused[0].getMessage()


@LOCAL
def test_a_hanging_ping_server_delays_no_run(
    hanging_server: PingServer,
    ping_server: PingServer,
    committed: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, ping_url=f"{hanging_server.url}/p")
    started = time.monotonic()
    assert committed(run, ping, occurrence, clock).state == "SUCCESS"
    run_took = time.monotonic() - started
    assert hanging_server.arrived.wait(5)  # the /start ping is being held...
    assert not pings.sender.wait(0)  # ...while the run has already returned
    with caplog.at_level(logging.WARNING, logger="scheduler_app.pings"):
        sent()
    given_up = time.monotonic() - started
    failed = [r for r in caplog.records if getattr(r, "action", "") == "ping.failed"]
    assert len(failed) == 2 and "timed out" in failed[0].getMessage()
    assert run_took < given_up
    assert given_up < 2 * TIMEOUT + 2  # two pings, each given up after the timeout
    # The threads are free again: the next ping goes out.
    committed(pings.ping, f"{ping_server.url}/next")
    sent()
    assert ping_server.paths == ["/next"]


# -- the beat's ping ------------------------------------------------------------------------


def test_the_beat_pings_every_n_ticks(ping_server: PingServer, committed: Any) -> None:
    url = f"{ping_server.url}/beat"
    beat = ticker(MemoryPublisher(), FakeClock(START), BEAT_PING_URL=url, BEAT_PING_EVERY=2)
    for _ in range(3):
        committed(beat.tick)
    sent()
    assert ping_server.paths == ["/beat", "/beat"]  # ticks 1 and 3; loopback: the operator's


def test_a_failed_tick_does_not_ping(ping_server: PingServer, committed: Any) -> None:
    beat = ticker(MemoryPublisher(), FakeClock(START), BEAT_PING_URL=f"{ping_server.url}/beat")

    def broken(now: Any) -> Any:
        raise RuntimeError("database unreachable")

    beat._tick = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        committed(beat.tick)
    sent()
    assert ping_server.paths == []


def test_a_bad_beat_ping_url_is_a_startup_error() -> None:
    with override_settings(SCHEDULER_BEAT_PING_URL="hc-ping.com/abc"):
        [error] = check_observability()
    assert error.id == "scheduler_app.E020" and "http://" in error.msg
    with override_settings(SCHEDULER_BEAT_PING_URL="https://hc-ping.com/abc"):
        assert check_observability() == []


def test_a_url_stored_past_the_services_is_refused_when_sent(
    ping_server: PingServer, committed: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="scheduler_app.pings"):
        committed(pings.ping, "gopher://127.0.0.1/x")
        sent()
    assert [r.action for r in caplog.records if hasattr(r, "action")] == ["ping.refused"]
