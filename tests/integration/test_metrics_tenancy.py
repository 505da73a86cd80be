"""Who reads /metrics and /scheduler/metrics, and what each reader is shown.

Anonymous readers get no figure (401), a logged-in non-staff user none (403); a tenant's staff
see only the series labelled with their tenants, never another tenant's label value nor a
system-wide figure; superusers and the SCHEDULER_METRICS_TOKEN bearer see everything; a token
no header could match (non-ASCII, wrong, none configured) is refused, never a 500.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from scheduler_app.clock import FakeClock
from tests.integration.support import START, MemoryPublisher, schedule, ticker

pytestmark = pytest.mark.django_db
URLS = ("/metrics", "/scheduler/metrics")
TOKEN = "s3cret-token"
SYSTEM_WIDE = ("scheduler_schedules", "scheduler_beats_alive", "scheduler_outbox_backlog")


@pytest.fixture
def tenants() -> Iterator[tuple[str, str]]:
    """Two tenants with an active schedule each and an occurrence handed over for each.

    The names are fresh per test: the event counters live in the process, across tests."""
    a, b = f"a-{uuid.uuid4().hex[:8]}", f"b-{uuid.uuid4().hex[:8]}"
    clock = FakeClock(START)
    for tenant in (a, b):
        schedule(clock, kind="interval", rule="60s", tenant=tenant)
    clock.advance(61)
    ticker(MemoryPublisher(), clock).tick()
    yield a, b


def staff(*tenant_names: str, superuser: bool = False) -> Any:
    user = get_user_model().objects.create_user(
        f"u-{uuid.uuid4().hex[:8]}", is_staff=True, is_superuser=superuser
    )
    for name in tenant_names:
        user.groups.add(Group.objects.get_or_create(name=f"tenant:{name}")[0])
    return user


def scrape(client: Client, url: str, **headers: str) -> tuple[set[str], set[str]]:
    """The families and the tenant label values of one scrape (asserting a 200)."""
    response = client.get(url, **headers)
    assert response.status_code == 200, response.content
    families, tenant_values = set(), set()
    for family in text_string_to_metric_families(response.content.decode()):
        families.add(family.name)
        tenant_values |= {s.labels["tenant"] for s in family.samples if "tenant" in s.labels}
    return families, tenant_values


@pytest.mark.parametrize("url", URLS)
def test_anonymous_readers_get_no_figure(url: str, tenants: tuple[str, str]) -> None:
    response = Client().get(url)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert b"scheduler_" not in response.content.replace(b"SCHEDULER_", b"")
    assert tenants[0].encode() not in response.content


@pytest.mark.parametrize("url", URLS)
def test_a_logged_in_user_who_is_not_staff_gets_no_figure(url: str) -> None:
    client = Client()
    client.force_login(get_user_model().objects.create_user("visitor"))
    response = client.get(url)
    assert response.status_code == 403
    assert b"scheduler_active" not in response.content


@pytest.mark.parametrize("url", URLS)
def test_a_tenants_staff_see_only_their_tenants_series(url: str, tenants: tuple[str, str]) -> None:
    a = tenants[0]
    client = Client()
    client.force_login(staff(a))
    families, tenant_values = scrape(client, url)
    assert tenant_values == {a}  # the active schedules and the emitted occurrences of a
    assert {"scheduler_active_schedules", "scheduler_occurrences_emitted"} <= families
    assert not families & set(SYSTEM_WIDE)  # every figure of all tenants together is hidden
    assert "scheduler_dispatch_lateness_seconds" not in families  # unlabelled event figures too


def test_a_staff_user_in_no_tenant_sees_only_the_schedules_without_a_tenant(
    tenants: tuple[str, str],
) -> None:
    clock = FakeClock(START)
    schedule(clock, kind="interval", rule="60s")
    client = Client()
    client.force_login(staff())
    _, tenant_values = scrape(client, "/scheduler/metrics")
    assert tenant_values <= {""}
    assert not tenant_values & set(tenants)


def all_tenants(user: Any) -> None:
    return None


@override_settings(SCHEDULER_TENANT_RESOLVER="tests.integration.test_metrics_tenancy.all_tenants")
def test_staff_of_every_tenant_who_are_not_superusers_still_get_no_system_wide_figure(
    tenants: tuple[str, str],
) -> None:
    client = Client()
    client.force_login(staff())
    families, tenant_values = scrape(client, "/scheduler/metrics")
    assert set(tenants) <= tenant_values
    assert not families & set(SYSTEM_WIDE)


@pytest.mark.parametrize("url", URLS)
@override_settings(SCHEDULER_METRICS_TOKEN=TOKEN)
def test_superusers_and_the_token_see_everything(url: str, tenants: tuple[str, str]) -> None:
    client = Client()
    by_token = scrape(client, url, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    client.force_login(staff(superuser=True))
    by_superuser = scrape(client, url)
    for families, tenant_values in (by_token, by_superuser):
        assert set(tenants) <= tenant_values
        assert set(SYSTEM_WIDE) <= families


@pytest.mark.parametrize(
    "header",
    [
        "Bearer s3crét-token",  # latin-1: how WSGI hands over a UTF-8 header
        "Bearer s3cret-token€",  # not even latin-1
        "Bearer \x00",
        "Bearer wrong",
        "Bearer ",
    ],
)
@override_settings(SCHEDULER_METRICS_TOKEN=TOKEN)
def test_a_token_that_does_not_match_is_refused_never_a_500(
    header: str, tenants: tuple[str, str]
) -> None:
    for url in URLS:
        response = Client().get(url, HTTP_AUTHORIZATION=header)
        assert response.status_code == 401
        assert tenants[0].encode() not in response.content


@override_settings(SCHEDULER_METRICS_TOKEN="jéton")
def test_a_non_ascii_configured_token_is_refused_not_a_500() -> None:
    response = Client().get("/scheduler/metrics", HTTP_AUTHORIZATION="Bearer jéton")
    assert response.status_code == 401


def test_a_bearer_without_a_configured_token_is_refused() -> None:
    response = Client().get("/scheduler/metrics", HTTP_AUTHORIZATION="Bearer anything")
    assert response.status_code == 401
    assert b"no SCHEDULER_METRICS_TOKEN is set" in response.content


@override_settings(SCHEDULER_METRICS_TOKEN=TOKEN)
def test_a_wrong_token_is_refused_even_with_a_staff_session(tenants: tuple[str, str]) -> None:
    """A scraper sending a stale token hears so, rather than getting a narrower view."""
    client = Client()
    client.force_login(staff(tenants[0]))
    assert client.get("/scheduler/metrics", HTTP_AUTHORIZATION="Bearer old").status_code == 401
