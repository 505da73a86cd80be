"""Sentry Crons check-ins per occurrence, captured with sentry-sdk's own transport hook."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import sentry_sdk
from django.test import override_settings
from sentry_sdk.envelope import Envelope
from sentry_sdk.transport import Transport

from project.demo.tasks import ping
from scheduler_app.clock import FakeClock
from scheduler_app.models import Schedule
from scheduler_app.observability import sentry
from tests.integration.observability_support import committed
from tests.integration.support import START
from tests.integration.worker_support import due_one, invalid, run

pytestmark = pytest.mark.django_db
__all__ = ["committed"]  # fixtures


class Capturing(Transport):
    """Keeps every envelope instead of sending it (no network)."""

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self.envelopes: list[Envelope] = []

    def capture_envelope(self, envelope: Envelope) -> None:
        self.envelopes.append(envelope)

    def check_ins(self) -> list[dict[str, Any]]:
        found = []
        for envelope in self.envelopes:
            for item in envelope.items:
                if item.type == "check_in" and item.payload.json is not None:
                    found.append(item.payload.json)
        return found


@pytest.fixture
def transport() -> Iterator[Capturing]:
    capturing = Capturing()
    sentry_sdk.init(
        dsn="https://public@sentry.example.invalid/1",
        transport=capturing,
        default_integrations=False,
        auto_enabling_integrations=False,
    )
    try:
        yield capturing
    finally:
        sentry_sdk.get_global_scope().set_client(None)


@override_settings(SCHEDULER_SENTRY_CRONS=True)
def test_in_progress_then_ok_with_the_schedules_monitor(
    transport: Capturing, committed: Any
) -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, key="Reports: nightly export", timezone="Europe/Riga")
    assert committed(run, ping, occurrence, clock).state == "SUCCESS"
    checks = transport.check_ins()
    assert [check["status"] for check in checks] == ["in_progress", "ok"]
    [slug] = {check["monitor_slug"] for check in checks}
    assert slug == sentry.slug(occurrence.schedule)
    assert slug.startswith("reports-nightly-export-")
    assert {check["check_in_id"] for check in checks} == {occurrence.pk.hex}
    config = checks[0]["monitor_config"]
    assert config["schedule"] == {"type": "interval", "value": 1, "unit": "minute"}
    assert config["timezone"] == "Europe/Riga"


@override_settings(SCHEDULER_SENTRY_CRONS=True)
def test_a_terminal_failure_checks_in_error(transport: Capturing, committed: Any) -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, task="tests.invalid")
    committed(run, invalid, occurrence, clock)
    checks = transport.check_ins()
    assert [check["status"] for check in checks] == ["in_progress", "error"]
    assert checks[0]["monitor_slug"] == str(occurrence.schedule_id)  # no key: the id


def test_off_unless_the_setting_says_so(transport: Capturing, committed: Any) -> None:
    clock = FakeClock(START)
    committed(run, ping, due_one(clock), clock)
    assert transport.check_ins() == []


def test_the_monitor_config_follows_the_rule() -> None:
    cron = Schedule(kind="cron", rule="30 2 * * MON", timezone="America/New_York", max_lateness=300)
    assert sentry.monitor_config(cron, None) == {
        "schedule": {"type": "crontab", "value": "30 2 * * MON"},
        "timezone": "America/New_York",
        "checkin_margin": 5,
    }
    hourly = Schedule(kind="interval", rule="7200", timezone="UTC", max_lateness=60, deadline=90)
    config = sentry.monitor_config(hourly, None)
    assert config is not None and config["schedule"] == {
        "type": "interval",
        "value": 2,
        "unit": "hour",
    }
    assert config["max_runtime"] == 2
    long_key = Schedule(key="x" * 80)
    assert len(sentry.slug(long_key)) <= sentry.SLUG_LENGTH
    assert sentry.slug(long_key) != sentry.slug(Schedule(key="x" * 79))


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (("", "acme:billing.nightly"), ("", "ACME billing-nightly")),  # same in Sentry's alphabet
        (("acme", "nightly"), ("globex", "nightly")),  # one key, two tenants
        (("acme", "x-nightly"), ("acme-x", "nightly")),  # the readable part is the same
        (("", "acme-nightly"), ("acme", "nightly")),
        (("", "x" * 80), ("", "x" * 79)),  # cut to fit
        (("", "!!!"), ("", "???")),  # nothing readable
    ],
)
def test_every_schedule_has_its_own_monitor(one: tuple[str, str], other: tuple[str, str]) -> None:
    first = sentry.slug(Schedule(tenant=one[0], key=one[1]))
    second = sentry.slug(Schedule(tenant=other[0], key=other[1]))
    assert first != second
    for slug in (first, second):
        assert len(slug) <= sentry.SLUG_LENGTH
        assert re.fullmatch(r"[a-z0-9_-]+", slug)


def test_the_slug_reads_as_the_tenant_and_key_and_is_stable() -> None:
    billing = Schedule(tenant="Acme", key="billing.nightly")
    assert sentry.slug(billing).startswith("acme-billing-nightly-")
    assert sentry.slug(billing) == sentry.slug(Schedule(tenant="Acme", key="billing.nightly"))
    keyless = Schedule(tenant="acme")
    assert sentry.slug(keyless) == str(keyless.pk)
