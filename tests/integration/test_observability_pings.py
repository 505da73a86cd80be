"""Healthchecks-style pings: the field through every surface, the pings a run sends (after
commit, off the task's thread), the address check at request time, a hanging ping server,
the beat's own ping."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from django.urls import reverse

from project.demo.tasks import ping
from scheduler_app import services
from scheduler_app.authoring import api
from scheduler_app.authoring.declarations import scheduled
from scheduler_app.checks.observability import check_observability
from scheduler_app.clock import FakeClock
from scheduler_app.contract import ContractError, import_text
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import Schedule
from scheduler_app.observability import addresses, pings, pinned
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


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("https://example.com/a\ud800b", "bad_character"),
        ("https://exa\udfffmple.com/", "bad_character"),
        ("https://example.com/a\x7fb", "invalid"),
        ("https://example.com/\u202e", "invalid"),
        ("https://example.com\u2028/x", "invalid"),
        ("https://example.com:8080/x", "port"),
    ],
)
def test_the_service_refuses_hidden_characters_and_other_ports_by_field(
    url: str, code: str
) -> None:
    with pytest.raises(ScheduleValidationError) as raised:
        schedule(FakeClock(START), kind="interval", rule="60s", ping_url=url)
    assert (raised.value.field, raised.value.code) == ("ping_url", code)
    assert not Schedule.objects.exists()


def test_another_port_is_accepted_for_an_allowed_host() -> None:
    url = "https://status.example.com:8080/x"
    with override_settings(SCHEDULER_PING_ALLOWED_HOSTS=("status.example.com",)):
        assert schedule(FakeClock(START), kind="interval", rule="60s", ping_url=url)


def test_an_import_with_a_lone_surrogate_is_a_contract_error() -> None:
    document = {
        "contract": "schedule.v1",
        "target": {"task": "demo.echo"},
        "timing": {"kind": "cron", "rule": "0 9 * * *", "timezone": "UTC"},
        "policies": {"ping_url": "https://example.com/\ud800"},
        "name": "surrogate",
    }
    with pytest.raises(ContractError, match="lone surrogate"):
        import_text(json.dumps([document]), clock=FakeClock(START))
    assert not Schedule.objects.exists()


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
    with override_settings(SCHEDULER_PING_ALLOWED_HOSTS=("127.0.0.1",)):  # allowed then...
        occurrence = due_one(clock, ping_url=f"{ping_server.url}/p")
    # ...and no longer when the ping is sent.
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


@override_settings(SCHEDULER_PING_ALLOW_CREDENTIALS=True, **LOCAL.options)
def test_credentials_in_the_url_are_sent_as_basic_auth(
    ping_server: PingServer, committed: Any
) -> None:
    clock = FakeClock(START)
    url = ping_server.url.replace("http://", "http://hc%40user:s3cret@") + "/p"
    occurrence = due_one(clock, ping_url=url)
    assert committed(run, ping, occurrence, clock).state == "SUCCESS"
    sent()
    assert ping_server.paths == ["/p/start", "/p"]
    assert ping_server.authorization == ["Basic aGNAdXNlcjpzM2NyZXQ="] * 2  # hc@user:s3cret


@pytest.fixture
def tarpit() -> Iterator[tuple[int, list[str]]]:
    """A port on every 127.0.0.x that accepts connections and never answers; the addresses
    connected to."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", 0))
    server.listen(50)
    reached: list[str] = []
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            held.append(connection)
            reached.append(connection.getsockname()[0])

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1], reached
    server.close()
    for connection in held:
        connection.close()


def many_addresses(monkeypatch: pytest.MonkeyPatch, host: str, count: int) -> None:
    """``host`` resolves to 127.0.0.1 ... 127.0.0.<count> (a name with many A records)."""
    real = socket.getaddrinfo

    def resolve(name: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        if name == host:
            answers = [f"127.0.0.{i}" for i in range(1, count + 1)]
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in answers]
        return real(name, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)


def test_a_name_with_many_silent_addresses_holds_the_sender_one_timeout(
    tarpit: tuple[int, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, reached = tarpit
    many_addresses(monkeypatch, "tarpit.example", 6)
    started = time.monotonic()
    with pytest.raises(OSError):
        pinned.request(
            f"http://tarpit.example:{port}/x", timeout=TIMEOUT, allowed_hosts=("tarpit.example",)
        )
    assert time.monotonic() - started < TIMEOUT + 0.4  # was 6 x the timeout
    assert reached == ["127.0.0.1"]


def test_a_tls_handshake_that_never_ends_is_given_up_at_the_deadline(
    tarpit: tuple[int, list[str]],
) -> None:
    port, reached = tarpit
    started = time.monotonic()
    with pytest.raises(OSError):
        pinned.request(f"https://127.0.0.1:{port}/x", timeout=TIMEOUT, allowed_hosts=("127.0.0.1",))
    assert time.monotonic() - started < TIMEOUT + 0.4
    assert reached == ["127.0.0.1"]


def test_at_most_two_addresses_are_tried(monkeypatch: pytest.MonkeyPatch) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, not listening: every connect is refused at once
    port = closed.getsockname()[1]
    many_addresses(monkeypatch, "refusing.example", 6)
    tried: list[str] = []
    connect = pinned._connect

    def spy(address: str, port: int, deadline: addresses.Deadline) -> Any:
        tried.append(address)
        return connect(address, port, deadline)

    monkeypatch.setattr(pinned, "_connect", spy)
    with pytest.raises(ConnectionRefusedError):
        pinned.request(
            f"http://refusing.example:{port}/x", timeout=5, allowed_hosts=("refusing.example",)
        )
    closed.close()
    assert tried == ["127.0.0.1", "127.0.0.2"]


def test_a_hanging_resolver_is_given_up_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    real = socket.getaddrinfo

    def hanging(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "slow-dns.example":
            release.wait(30)
        return real("127.0.0.1", *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", hanging)
    started = time.monotonic()
    try:
        with pytest.raises(TimeoutError, match=r"resolving slow-dns\.example"):
            pinned.request("https://slow-dns.example/x", timeout=TIMEOUT)
        assert time.monotonic() - started < TIMEOUT + 0.4
    finally:
        release.set()


def test_hanging_resolutions_are_bounded_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    calls: list[str] = []

    def hanging(name: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        release.wait(30)
        raise OSError("released")

    monkeypatch.setattr(socket, "getaddrinfo", hanging)
    resolver = addresses._Resolver()
    try:
        for number in range(addresses.RESOLVERS):
            with pytest.raises(TimeoutError, match="took longer"):
                resolver.resolve(f"slow{number}.example", 443, addresses.Deadline(0.05))
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="already hang"):
            resolver.resolve("one-more.example", 443, addresses.Deadline(0.05))
        assert time.monotonic() - started < 0.5
        assert "one-more.example" not in calls  # no thread was started for it
    finally:
        release.set()


def test_a_server_answering_byte_by_byte_is_given_up_at_the_deadline() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    stop = threading.Event()

    def drip() -> None:
        connection, _ = server.accept()
        try:
            connection.sendall(b"HTTP/1.1 200 OK\r\n")
            while not stop.wait(0.05):  # one header byte at a time, never the end
                connection.sendall(b"X")
        except OSError:
            return
        finally:
            connection.close()

    threading.Thread(target=drip, daemon=True).start()
    started = time.monotonic()
    try:
        with pytest.raises((TimeoutError, OSError)):
            pinned.request(
                f"http://127.0.0.1:{server.getsockname()[1]}/x",
                timeout=TIMEOUT,
                allowed_hosts=("127.0.0.1",),
            )
        assert time.monotonic() - started < TIMEOUT + 0.4
    finally:
        stop.set()
        server.close()


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
