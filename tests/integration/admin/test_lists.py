"""The lists and the monitoring page: fixed query counts, time order, labels, filters, search."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from scheduler_app import services
from scheduler_app.admin import monitoring
from scheduler_app.models import Occurrence, OccurrenceState, Schedule
from tests.integration.admin.support import client_for, with_history

pytestmark = pytest.mark.django_db

SCHEDULES = reverse("admin:scheduler_app_schedule_changelist")
OCCURRENCES = reverse("admin:scheduler_app_occurrence_changelist")
MONITORING = reverse("admin:scheduler_app_monitoring")


@pytest.fixture
def client() -> Client:
    return client_for(User.objects.create_superuser("admin", "a@example.com", "pw"))


def queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def make(count: int, factory: Callable[..., object]) -> None:
    for index in range(count):
        factory(name=f"report {index:03d}", tenant=f"t{index % 3}")


def test_the_schedule_list_costs_the_same_with_3_or_40_rows(client: Client) -> None:
    make(3, with_history)
    few = queries(client, SCHEDULES)
    make(37, with_history)
    many = queries(client, SCHEDULES)
    assert few == many
    assert many <= 12  # session, user, the page, the filters; none per row


def test_the_schedule_list_reads_at_a_glance(client: Client) -> None:
    _, occurrence = with_history(name="minutely", timezone="Asia/Kolkata")
    Occurrence.objects.filter(pk=occurrence.pk).update(
        state=OccurrenceState.SUCCEEDED, started_at=occurrence.scheduled_for + timedelta(seconds=2)
    )
    services.create_schedule(
        task="demo.ping", kind="cron", rule="30 8 * * MON-FRI", name="weekday", timezone="UTC"
    )
    page = client.get(SCHEDULES).content.decode()
    assert "At 08:30, Monday through Friday" in page  # the rule in English
    assert "Every 1m (fixed rate" in page
    assert " IST</span>" in page and " UTC</span>" in page  # local with its zone, then UTC
    assert 'class="sched-badge sched-ok">succeeded</span>' in page
    assert "2.0 s late" in page


def test_the_schedule_list_filters_by_last_outcome_and_tenant(client: Client) -> None:
    _, occurrence = with_history(name="broken", tenant="acme")
    Occurrence.objects.filter(pk=occurrence.pk).update(state=OccurrenceState.FAILED)
    with_history(name="fine", tenant="globex")
    failed = client.get(SCHEDULES + "?last=failed").content.decode()
    assert "broken" in failed and ">fine<" not in failed
    acme = client.get(SCHEDULES + "?tenant=globex").content.decode()
    assert ">fine<" in acme and "broken" not in acme


def test_the_occurrence_list_is_in_time_order_with_zone_labels(client: Client) -> None:
    _, first = with_history(name="nightly", timezone="Europe/Riga")
    later = Occurrence.objects.get(pk=first.pk)
    later.pk = None
    later.id = None  # type: ignore[assignment]
    later.idempotency_key = "later"
    later.trigger = "manual"
    later.scheduled_for = first.scheduled_for + timedelta(hours=1)
    later.window_start = later.window_end = later.scheduled_for
    later.save(force_insert=True)
    response = client.get(OCCURRENCES)
    listed = [o.pk for o in response.context["cl"].result_list]
    assert listed == [later.pk, first.pk]  # newest slot first, not UUID order
    page = response.content.decode()
    assert " EET</span>" in page or " EEST</span>" in page
    assert " UTC</span>" in page


def test_the_occurrence_list_searches_by_schedule_name_and_filters_by_schedule(
    client: Client,
) -> None:
    alpha, _ = with_history(name="alpha export")
    with_history(name="beta import")
    found = client.get(OCCURRENCES + "?q=alpha").context["cl"].result_list
    assert [o.schedule.name for o in found] == ["alpha export"]
    url = OCCURRENCES + f"?schedule__id__exact={alpha.pk}"
    filtered = client.get(url).context["cl"].result_list
    assert [o.schedule.name for o in filtered] == ["alpha export"]


def test_an_idempotency_key_pasted_in_the_search_finds_its_occurrence_by_id(
    client: Client,
) -> None:
    """As a task logs it (``current_occurrence().idempotency_key``), spaces around it too;
    one query by primary key, no scan of the ledger; another tenant's key finds nothing."""
    _, occurrence = with_history(name="alpha export", tenant="acme")
    with_history(name="beta import", tenant="acme")
    key = occurrence.idempotency_key
    found = client.get(OCCURRENCES, {"q": f" {key} "}).context["cl"].result_list
    assert [o.pk for o in found] == [occurrence.pk]
    assert list(client.get(OCCURRENCES, {"q": key + "0"}).context["cl"].result_list) == []
    other = User.objects.create_user("globex-operator", password="pw", is_staff=True)
    other.user_permissions.add(*Permission.objects.filter(codename="view_occurrence"))
    assert not client_for(other).get(OCCURRENCES, {"q": key}).context["cl"].result_list
    with CaptureQueriesContext(connection) as captured:
        client.get(OCCURRENCES, {"q": key})
    searched = [q["sql"] for q in captured if "idempotency_key" in q["sql"]]
    assert searched and all('"id" = ' in sql for sql in searched), searched


def test_a_key_whose_schedule_id_is_upper_cased_still_finds_its_occurrence(
    client: Client,
) -> None:
    """Some log viewers and UUID tools show a UUID in capitals (review 17: before 0018 the
    search was case-blind). A key-like term of no occurrence still searches the schedules'
    keys, as any term does."""
    _, occurrence = with_history(name="alpha export")
    schedule_id, _, slot = occurrence.idempotency_key.partition(":")
    found = client.get(OCCURRENCES, {"q": f"{schedule_id.upper()}:{slot}"}).context["cl"]
    assert [o.pk for o in found.result_list] == [occurrence.pk]
    keyed, _ = with_history(name="keyed")
    Schedule.objects.filter(pk=keyed.pk).update(key=f"{schedule_id}:nightly")
    found = client.get(OCCURRENCES, {"q": f"{schedule_id}:nightly"}).context["cl"]
    assert {o.schedule_id for o in found.result_list} == {keyed.pk}


def test_the_occurrence_page_shows_its_attempts(client: Client) -> None:
    _, occurrence = with_history()
    Occurrence.objects.filter(pk=occurrence.pk).update(state=OccurrenceState.FAILED)
    services.replay_occurrence(occurrence.pk, by="admin", note="after the fix")
    with CaptureQueriesContext(connection) as seen:
        page = client.get(reverse("admin:scheduler_app_occurrence_change", args=[occurrence.pk]))
    text = page.content.decode()
    assert "after the fix" in text and "replay" in text
    # The attempts are read by the occurrence and its slot (their partition key).
    [read] = [
        q["sql"]
        for q in seen.captured_queries
        if 'FROM "scheduler_app_occurrenceattempt"' in q["sql"]
    ]
    assert '"scheduler_app_occurrenceattempt"."scheduled_for" =' in read, read


def test_the_monitoring_page_costs_a_fixed_number_of_queries(client: Client) -> None:
    make(2, with_history)
    few = queries(client, MONITORING)
    make(20, with_history)
    Occurrence.objects.filter(schedule__name="report 001").update(state=OccurrenceState.FAILED)
    many = queries(client, MONITORING)
    assert few == many <= 14


def test_the_monitoring_page_shows_the_figures(client: Client) -> None:
    schedule, occurrence = with_history(name="watched")
    Occurrence.objects.filter(pk=occurrence.pk).update(state=OccurrenceState.FAILED)
    Schedule.objects.filter(pk=schedule.pk).update(
        next_run_at=schedule.created_at - timedelta(hours=2)
    )
    page = client.get(MONITORING).content.decode()
    assert "<svg" in page and "watched" in page
    assert "1</span> failed (dead letters)" in page
    assert "1</span> overdue active schedule(s)" in page
    for heading in ("Lateness", "Last 24 hours", "Misfires and skips"):
        assert heading in page


def test_the_monitoring_page_counts_dead_letters_up_to_a_cap(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The count of every failed row ever kept grows with the ledger: it stops at the cap."""
    for name in ("one", "two", "three"):
        _, occurrence = with_history(name=name)
        Occurrence.objects.filter(pk=occurrence.pk).update(state=OccurrenceState.FAILED)
    monkeypatch.setattr(monitoring, "FAILED_CAP", 2)
    assert "2+</span> failed (dead letters)" in client.get(MONITORING).content.decode()
    monkeypatch.setattr(monitoring, "FAILED_CAP", 3)
    assert "3</span> failed (dead letters)" in client.get(MONITORING).content.decode()


def test_the_monitoring_page_is_scoped_and_needs_view_permission() -> None:
    from tests.integration.admin.support import staff

    with_history(name="globex job", tenant="globex")
    acme = client_for(staff("acme", "view_schedule", tenants=("acme",)))
    assert "globex job" not in acme.get(MONITORING).content.decode()
    assert client_for(staff("nobody")).get(MONITORING).status_code == 403


@pytest.mark.postgres
def test_the_unfiltered_occurrence_list_does_not_count_every_row(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scheduler_app.admin import paging

    make(3, with_history)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE scheduler_app_occurrence")
    monkeypatch.setattr(paging, "ESTIMATE_ABOVE", 0)  # as if the table were huge
    with CaptureQueriesContext(connection) as captured:
        assert client.get(OCCURRENCES).status_code == 200
    counts = [q["sql"] for q in captured if "COUNT(*)" in q["sql"] and "occurrence" in q["sql"]]
    assert counts == []
    filtered = OCCURRENCES + "?state=failed"
    with CaptureQueriesContext(connection) as captured:
        client.get(filtered)
    assert any("COUNT(*)" in q["sql"] for q in captured)  # filtered lists are counted exactly


@pytest.mark.postgres
def test_a_filtered_occurrence_list_counts_up_to_a_cap_then_estimates(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scheduler_app.admin import paging

    make(6, with_history)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE scheduler_app_occurrence")
    filtered = OCCURRENCES + "?q=report"
    assert client.get(filtered).context["cl"].result_count == 6
    monkeypatch.setattr(paging, "COUNT_UP_TO", 2)  # as if the schedule had a long history
    with CaptureQueriesContext(connection) as captured:
        shown = client.get(filtered).context["cl"].result_count
    # Counted no further than the cap, then the planner's estimate (at least the cap + 1).
    counts = [q["sql"] for q in captured if "COUNT(*)" in q["sql"] and "occurrence" in q["sql"]]
    assert counts and all("LIMIT 3" in sql for sql in counts), counts
    assert shown >= 3


@pytest.mark.postgres
def test_pages_past_a_short_estimate_are_still_served(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scheduler_app.admin import paging
    from scheduler_app.admin.occurrences import OccurrenceAdmin

    make(6, with_history)
    monkeypatch.setattr(paging, "COUNT_UP_TO", 2)
    monkeypatch.setattr(paging, "_planned_rows", lambda objects: 1)  # the planner is short
    monkeypatch.setattr(OccurrenceAdmin, "list_per_page", 2)
    first = client.get(OCCURRENCES + "?q=report")
    assert first.context["cl"].result_count == 3  # two pages, by the estimate
    seen = {o.pk for o in first.context["cl"].result_list}
    for number in (2, 3):
        page = client.get(OCCURRENCES + f"?q=report&p={number}")
        assert page.status_code == 200
        rows = page.context["cl"].result_list
        assert len(rows) == 2  # full pages, not clipped to the estimate
        seen |= {o.pk for o in rows}
    assert len(seen) == 6
    assert list(client.get(OCCURRENCES + "?q=report&p=4").context["cl"].result_list) == []


def test_a_filtered_occurrence_list_is_counted_exactly_on_sqlite(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scheduler_app.admin import paging

    if connection.vendor == "postgresql":
        pytest.skip("SQLite only")
    make(3, with_history)
    monkeypatch.setattr(paging, "COUNT_UP_TO", 1)
    assert client.get(OCCURRENCES + "?q=report").context["cl"].result_count == 3


def test_the_admin_indexes_exist() -> None:
    with connection.cursor() as cursor:
        occurrence = connection.introspection.get_constraints(cursor, "scheduler_app_occurrence")
        # The schedule's next run is in its runtime table (models.runtime).
        schedule = connection.introspection.get_constraints(
            cursor, "scheduler_app_schedule_runtime"
        )
    assert occurrence["occ_slot_idx"]["columns"] == ["scheduled_for"]
    assert occurrence["occ_skipped_idx"]["columns"] == ["scheduled_for", "reason"]
    assert schedule["sched_next_run_idx"]["columns"] == ["next_run_at"]
