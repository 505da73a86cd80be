"""Ping URLs checked where they are stored, and addresses checked where they are sent."""

from __future__ import annotations

import os
import warnings

import pytest

from scheduler_app.errors import ScheduleValidationError
from scheduler_app.observability.addresses import (
    Deadline,
    PingRefused,
    checked_addresses,
    forbidden,
)
from scheduler_app.observability.pings import Ping, Sender
from scheduler_app.observability.pinned import headers
from scheduler_app.observability.urls import MAX_LENGTH, check_ping_url, with_suffix


@pytest.mark.parametrize(
    "url",
    ["https://hc-ping.com/5a1e4d0c", "http://status.example.com:8080/p/x", ""],
)
def test_accepted(url: str) -> None:
    assert check_ping_url(url) == url


@pytest.mark.parametrize(
    ("url", "code", "words"),
    [
        ("ftp://example.com/x", "invalid_scheme", "http:// or https://"),
        ("javascript:alert(1)", "invalid_scheme", "http:// or https://"),
        ("file:///etc/passwd", "invalid_scheme", "http:// or https://"),
        ("https:///path", "invalid", "no host"),
        ("https://user:pw@hc-ping.com/x", "credentials", "SCHEDULER_PING_ALLOW_CREDENTIALS"),
        ("https://hc-ping.com/x?rid=1", "invalid", "query"),
        ("https://hc-ping.com/x y", "invalid", "spaces"),
        ("https://hc-ping.com/a\ud800b", "bad_character", "lone surrogate"),
        ("https://exa\udfffmple.com/", "bad_character", "lone surrogate"),
        ("https://hc-ping.com/a\x00b", "bad_character", "NUL"),
        ("https://hc-ping.com/a\x7fb", "invalid", "control"),
        ("https://hc-ping.com/a\x85b", "invalid", "control"),
        ("https://hc-ping.com/\u202e", "invalid", "U+202E"),
        ("https://hc-ping.com/\u2066x\u2069", "invalid", "invisible"),
        ("https://hc-ping.com/a\u200bb", "invalid", "invisible"),
        ("https://example.com\u2028/x", "invalid", "spaces"),
        ("https://hc-ping.com:99999/x", "invalid", "not a URL"),
        ("https://hc-ping.com/" + "a" * MAX_LENGTH, "too_long", f"at most {MAX_LENGTH}"),
        (42, "invalid", "URL string"),
    ],
)
def test_refused_with_a_reason(url: object, code: str, words: str) -> None:
    with pytest.raises(ScheduleValidationError) as raised:
        check_ping_url(url)
    assert raised.value.field == "ping_url"
    assert raised.value.code == code
    assert words in raised.value.message


@pytest.mark.parametrize("url", ["https://hc-ping.com:8443/x", "http://hc-ping.com:22/x"])
def test_a_schedules_ping_uses_ports_80_and_443_unless_its_host_is_allowed(url: str) -> None:
    with pytest.raises(ScheduleValidationError) as raised:
        check_ping_url(url, allowed_hosts=())
    assert raised.value.code == "port" and "SCHEDULER_PING_ALLOWED_HOSTS" in raised.value.message
    assert check_ping_url(url, allowed_hosts=("HC-PING.com",)) == url
    assert check_ping_url(url) == url  # the operator's own URL (the beat's): any port


@pytest.mark.parametrize(
    "url", ["https://hc-ping.com:443/x", "http://hc-ping.com:80/x", "http://hc-ping.com:443/x"]
)
def test_the_usual_ports_need_no_allowance(url: str) -> None:
    assert check_ping_url(url, allowed_hosts=()) == url


def test_credentials_in_the_url_are_sent_as_basic_auth() -> None:
    sent = headers("https://us%40er:p%3Aw@hc-ping.com/x")
    assert sent["Authorization"] == "Basic dXNAZXI6cDp3"  # base64 of "us@er:p:w"
    assert "Authorization" not in headers("https://hc-ping.com/x")
    assert headers("https://token@hc-ping.com/x")["Authorization"] == "Basic dG9rZW46"
    assert "Authorization" not in headers("https://@hc-ping.com/x")


def test_credentials_when_the_operator_allows_them() -> None:
    url = "https://user:pw@hc-ping.com/x"
    assert check_ping_url(url, allow_credentials=True) == url


def test_the_suffix_follows_healthchecks_conventions() -> None:
    assert with_suffix("https://hc-ping.com/abc", "start") == "https://hc-ping.com/abc/start"
    assert with_suffix("https://hc-ping.com/abc/", "fail") == "https://hc-ping.com/abc/fail"
    assert with_suffix("https://hc-ping.com/abc", "") == "https://hc-ping.com/abc"


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",  # the cloud metadata service
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "fe80::1",
        "fd00::1",
        "::ffff:127.0.0.1",
        "224.0.0.1",
        "::127.0.0.1",  # IPv4-compatible
        "::a9fe:a9fe",
        "::10.0.0.1",
        "64:ff9b::7f00:1",  # NAT64
        "64:ff9b::a9fe:a9fe",
        "64:ff9b::a00:1",
        "2002:7f00:1::",  # 6to4
        "2002:a9fe:a9fe::1",
        "2002:c0a8:101::",
        "2001:0:808:808:0:0:80ff:fffe",  # Teredo, client 127.0.0.1
        "fec0::1",  # site-local
        "fe80::1%eth0",
    ],
)
def test_private_loopback_and_link_local_addresses_are_forbidden(address: str) -> None:
    assert forbidden(address)


@pytest.mark.parametrize("address", ["1.1.1.1", "93.184.216.34", "2606:4700:4700::1111"])
def test_public_addresses_are_not(address: str) -> None:
    assert not forbidden(address)


def test_nat64_carrying_a_public_address_is_public() -> None:
    assert not forbidden("64:ff9b::808:808")


def test_a_schedules_ping_to_another_port_is_refused_when_sent_unless_allowed() -> None:
    with pytest.raises(PingRefused, match="port 8080"):
        checked_addresses("localhost", 8080, allowed_hosts=())
    assert checked_addresses("localhost", 8080, allowed_hosts={"localhost"})


def test_the_deadline_is_one_budget() -> None:
    now = [100.0]
    deadline = Deadline(2.0, lambda: now[0])
    assert deadline.remaining() == 2.0
    now[0] += 1.5
    assert deadline.remaining() == 0.5
    now[0] += 0.5
    with pytest.raises(TimeoutError, match="2 s"):
        deadline.remaining()


def test_a_name_with_one_private_answer_is_refused_unless_allowed() -> None:
    with pytest.raises(PingRefused, match="SCHEDULER_PING_ALLOWED_HOSTS"):
        checked_addresses("localhost", 80, allowed_hosts=())
    assert checked_addresses("localhost", 80, allowed_hosts={"localhost"})


def test_a_forked_child_gets_its_own_sender_threads() -> None:
    sent: list[str] = []
    sender = Sender(lambda ping: sent.append(ping.url))
    sender.send(Ping("https://hc-ping.com/parent"))
    assert sender.wait(5)
    reader, writer = os.pipe()
    with warnings.catch_warnings():  # Python 3.12+: fork() with threads running warns
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: the parent's threads did not come along
        sender.send(Ping("https://hc-ping.com/child"))
        os.write(writer, b"1" if sender.wait(5) and sent[-1].endswith("child") else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(reader, 1) == b"1"
    assert sent == ["https://hc-ping.com/parent"]
