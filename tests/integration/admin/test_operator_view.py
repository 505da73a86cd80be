"""The operator's view: a list that never shows what will not happen, the audit trail on the
schedule's History page, one format for instants, the occurrence and monitoring pages."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import ProgrammingError
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django_webtest import DjangoTestApp  # type: ignore[import-untyped]

from scheduler_app import services
from scheduler_app.admin import display
from scheduler_app.clock import FakeClock
from scheduler_app.models import (
    AttemptKind,
    BeatHeartbeat,
    KillSwitch,
    KillSwitchEvent,
    KillSwitchScope,
    Occurrence,
    OccurrenceAttempt,
    OccurrenceState,
    Schedule,
    ScheduleStatus,
)
from scheduler_app.monitoring.lateness import window_rows
from tests.integration.admin.support import (
    A_NEW_SCHEDULE,
    ADD_URL,
    change_url,
    changelist_action,
    client_for,
    delete_form,
    form_on,
    page_errors,
    schedule_form,
    staff,
    submit,
    with_history,
)

pytestmark = pytest.mark.django_db

SCHEDULES = reverse("admin:scheduler_app_schedule_changelist")
MONITORING = reverse("admin:scheduler_app_monitoring")


@pytest.fixture
def admin_user() -> User:
    return User.objects.create_superuser("admin", "a@example.com", "pw")


@pytest.fixture
def client(admin_user: User) -> Client:
    return client_for(admin_user)


def schedule(name: str, **fields: Any) -> Schedule:
    values = {"task": "demo.ping", "kind": "cron", "rule": "0 8 * * *", "name": name, **fields}
    return services.create_schedule(**values)


def switch_on(scope: str, target: str = "", by: str = "root", reason: str = "incident") -> None:
    now = timezone.now()
    KillSwitch.objects.create(
        scope=scope, target=target, enabled=True, reason=reason, changed_by=by, changed_at=now
    )
    KillSwitchEvent.objects.create(
        scope=scope, target=target, enabled=True, by=by, at=now, reason=reason
    )


def listed(client: Client) -> dict[str, tuple[str, str]]:
    """Each listed schedule's name → (next run cell, status cell), as the list renders them."""
    response = client.get(SCHEDULES)
    changelist = response.context["cl"]
    model_admin = changelist.model_admin
    return {
        obj.name: (str(model_admin.next_run_text(obj)), str(model_admin.status_badge(obj)))
        for obj in changelist.result_list
    }


# -- the list never misleads -----------------------------------------------------------------


def test_only_a_schedule_that_will_run_shows_a_next_run(client: Client, admin_user: User) -> None:
    schedule("runs")
    paused = schedule("paused")
    services.pause_schedule(paused.pk, user=admin_user, note="waiting for the new bucket")
    cancelled = schedule("cancelled")
    services.cancel_schedule(cancelled.pk, user=admin_user)
    awaiting = schedule("awaiting")
    Schedule.objects.filter(pk=awaiting.pk).update(status=ScheduleStatus.AWAITING_APPROVAL)
    schedule("switched", task="demo.ping", tenant="acme")
    switch_on(KillSwitchScope.TENANT, "acme")
    assert Schedule.objects.exclude(next_run_at=None).count() >= 4  # stored, yet not shown

    rows = listed(client)
    assert "UTC" in rows["runs"][0]
    for name in ("paused", "cancelled", "awaiting", "switched"):
        assert rows[name][0] == "-", name
    assert ">awaiting approval</span>" in rows["awaiting"][1]
    assert ">kill switch</span>" in rows["switched"][1]
    assert ">kill switch</span>" not in rows["runs"][1]
    assert "waiting for the new bucket" in rows["paused"][1]  # the note, in the list
    assert 'title="paused since' in rows["paused"][1] and "by admin" in rows["paused"][1]


@pytest.mark.parametrize(
    ("scope", "target"),
    [(KillSwitchScope.GLOBAL, ""), (KillSwitchScope.TASK, "demo.ping")],
)
def test_a_global_or_task_switch_shows_the_badge_too(
    client: Client, scope: str, target: str
) -> None:
    schedule("covered")
    schedule("other task", task="demo.digest")
    switch_on(scope, target)
    rows = listed(client)
    assert ">kill switch</span>" in rows["covered"][1] and rows["covered"][0] == "-"
    covers_all = scope == KillSwitchScope.GLOBAL
    assert (">kill switch</span>" in rows["other task"][1]) is covers_all


def test_a_switch_that_is_off_stops_nothing(client: Client) -> None:
    schedule("runs")
    KillSwitch.objects.create(
        scope=KillSwitchScope.GLOBAL, enabled=False, reason="over", changed_at=timezone.now()
    )
    assert ">kill switch</span>" not in listed(client)["runs"][1]


def test_an_unnamed_schedule_reads_as_its_task_and_rule(client: Client) -> None:
    unnamed = services.create_schedule(task="demo.ping", kind="cron", rule="30 8 * * MON-FRI")
    page = client.get(SCHEDULES).content.decode()
    assert "demo.ping: At 08:30, Monday through Friday" in page
    assert f">{unnamed.pk}<" not in page


def test_list_schedules_json_has_no_next_run_for_what_will_not_run(admin_user: User) -> None:
    schedule("runs")
    paused = schedule("paused")
    services.pause_schedule(paused.pk, user=admin_user, note="later")
    awaiting = schedule("awaiting")
    Schedule.objects.filter(pk=awaiting.pk).update(status=ScheduleStatus.AWAITING_APPROVAL)
    schedule("switched", task="demo.digest")
    switch_on(KillSwitchScope.TASK, "demo.digest")
    out = StringIO()
    call_command("list_schedules", "--json", stdout=out)
    rows = {row["name"]: row for row in json.loads(out.getvalue())}
    assert rows["runs"]["next_run_at"] is not None and rows["runs"]["kill_switched"] is False
    for name in ("paused", "awaiting", "switched"):
        assert rows[name]["next_run_at"] is None, name
    assert rows["switched"]["kill_switched"] is True
    assert rows["paused"]["pause_note"] == "later"
    table = StringIO()
    call_command("list_schedules", stdout=table)
    line = next(text for text in table.getvalue().splitlines() if "switched" in text)
    assert "active (kill switch)" in line and " - " in line


def test_the_list_has_five_columns_that_wrap(client: Client) -> None:
    schedule("one")
    changelist = client.get(SCHEDULES).context["cl"]
    assert list(changelist.list_display) == [
        "action_checkbox",
        "name_text",
        "rule_text",
        "status_badge",
        "next_run_text",
        "last_outcome",
    ]


# -- the audit trail on the History page -------------------------------------------------------


def history(client: Client, target: Schedule) -> str:
    url = reverse("admin:scheduler_app_schedule_history", args=[target.pk])
    response = client.get(url)
    assert response.status_code == 200
    return str(response.content.decode())


def test_the_history_page_shows_every_action_with_who_when_and_why(
    client: Client, admin_user: User
) -> None:
    target = schedule("audited", timezone="Europe/Paris")
    services.pause_schedule(target.pk, user=admin_user, note="bucket migration")
    services.resume_schedule(target.pk, user=admin_user, note="bucket is back")
    services.run_now(target.pk, user=admin_user, reason="customer asked")
    page = history(client, target)
    audit = page[page.index('id="sched-audit"') : page.index('id="sched-switch-history"')]
    for text in ("paused", "resumed", "run now", "created", "bucket migration", "customer asked"):
        assert text in audit, text
    assert "<td>admin</td>" in audit and "<td>v1</td>" in audit
    assert " CET (" in audit or " CEST (" in audit  # the schedule's zone, UTC beside it
    assert "Admin log" in page  # Django's own LogEntry lines are still there


def test_the_admin_form_records_its_user_in_the_trail(
    django_app: DjangoTestApp, admin_user: User, client: Client
) -> None:
    response = submit(schedule_form(django_app, ADD_URL, admin_user), "_save", **A_NEW_SCHEDULE)
    assert response.status_code == 302, page_errors(response)
    created = Schedule.objects.get()
    edit = schedule_form(django_app, change_url(created), admin_user)
    edited = submit(edit, "_save", repeat="advanced", rule="30 8 * * *")
    assert edited.status_code == 302, page_errors(edited)
    page = history(client, created)
    audit = page[page.index('id="sched-audit"') : page.index('id="sched-switch-history"')]
    assert audit.count("<td>admin</td>") == 2  # created and edited, both by the form's user
    assert "edited: a new version" in audit
    delete = reverse("admin:scheduler_app_schedule_delete", args=[created.pk])
    delete_form(django_app, delete, admin_user).submit()
    from scheduler_app.safety import audit as trail

    assert trail.trail([created.pk]).filter(by="admin", action="deleted").exists()


def test_the_history_page_lists_the_switches_that_covered_it(client: Client) -> None:
    target = schedule("stopped", tenant="acme")
    switch_on(KillSwitchScope.TENANT, "acme", by="root", reason="acme incident")
    switch_on(KillSwitchScope.TENANT, "globex", reason="not this one")
    page = history(client, target)
    switches = page[page.index('id="sched-switch-history"') : page.index('id="change-history"')]
    assert "acme incident" in switches and "tenant acme" in switches
    assert "not this one" not in switches


def test_another_tenants_history_page_is_not_found(admin_user: User) -> None:
    theirs = schedule("theirs", tenant="globex")
    acme = client_for(staff("acme", "view_schedule", tenants=("acme",)))
    url = reverse("admin:scheduler_app_schedule_history", args=[theirs.pk])
    assert acme.get(url).status_code == 404


# -- one format for instants -------------------------------------------------------------------


def test_an_instant_has_seconds_and_zone_with_utc_beside_it() -> None:
    instant = datetime(2026, 12, 1, 17, 49, 7, 123456, tzinfo=UTC)
    assert display.instant_text(instant, "Europe/Paris") == "2026-12-01 18:49:07 CET (17:49:07 UTC)"
    assert display.instant_text(instant) == "2026-12-01 17:49:07 UTC"
    assert display.instant_text(datetime(2026, 12, 1, 17, 0, tzinfo=UTC)) == (
        "2026-12-01 17:00:00 UTC"  # seconds even when zero
    )
    late = datetime(2026, 12, 1, 23, 30, tzinfo=UTC)
    assert display.instant_text(late, "Europe/Paris") == (
        "2026-12-02 00:30:00 CET (2026-12-01 23:30:00 UTC)"  # the UTC date when it differs
    )
    assert display.instant_text(None) == "-"


def test_the_occurrence_page_shows_instants_in_the_one_format(client: Client) -> None:
    _, occurrence = with_history(timezone="Europe/Paris")
    page = client.get(reverse("admin:scheduler_app_occurrence_change", args=[occurrence.pk]))
    text = page.content.decode()
    expected = display.instant_text(occurrence.created_at, "Europe/Paris")
    assert expected in text
    assert " a.m." not in text and " p.m." not in text  # no Django default date format


def test_the_code_declared_page_shows_instants_in_the_one_format(client: Client) -> None:
    ends = datetime(2027, 6, 30, 18, 49, 7, tzinfo=UTC)
    target = schedule("declared", timezone="Europe/Paris", ends_at=ends)
    Schedule.objects.filter(pk=target.pk).update(origin="code")
    page = client.get(reverse("admin:scheduler_app_schedule_change", args=[target.pk]))
    text = page.content.decode()
    assert display.instant_text(target.created_at, target.timezone) in text
    assert "2027-06-30 20:49:07 CEST (18:49:07 UTC)" in text
    assert " a.m." not in text and " p.m." not in text


# -- the occurrence page -----------------------------------------------------------------------


def replayed_then_succeeded(admin_user: User) -> Occurrence:
    _, occurrence = with_history()
    Occurrence.objects.filter(pk=occurrence.pk).update(
        state=OccurrenceState.FAILED, last_error="ConnectionError: broker down"
    )
    services.replay_occurrence(occurrence.pk, user=admin_user, note="broker is back")
    Occurrence.objects.filter(pk=occurrence.pk).update(state=OccurrenceState.SUCCEEDED)
    return occurrence


def test_a_succeeded_occurrence_does_not_show_an_earlier_error_as_its_own(
    client: Client, admin_user: User
) -> None:
    occurrence = replayed_then_succeeded(admin_user)
    page = client.get(reverse("admin:scheduler_app_occurrence_change", args=[occurrence.pk]))
    outcome = page.context["adminform"].form.instance
    model_admin = page.context["adminform"].model_admin
    assert "ConnectionError" not in model_admin.error_text(outcome)
    assert "earlier attempt" in model_admin.error_text(outcome)
    Occurrence.objects.filter(pk=occurrence.pk).update(state=OccurrenceState.FAILED)
    outcome.refresh_from_db()
    assert model_admin.error_text(outcome) == "ConnectionError: broker down"


def test_the_replay_attempt_reads_as_a_request_by_its_user(
    client: Client, admin_user: User
) -> None:
    occurrence = replayed_then_succeeded(admin_user)
    event = OccurrenceAttempt.objects.get(occurrence=occurrence, kind=AttemptKind.REPLAY)
    page = client.get(reverse("admin:scheduler_app_occurrence_change", args=[occurrence.pk]))
    text = page.content.decode()
    assert "replay requested by admin (it was failed)" in text
    assert f">{event.outcome}</td>" not in text.replace("<td>", ">")  # not a bare "failed"


def test_the_replay_action_passes_the_user(django_app: DjangoTestApp, admin_user: User) -> None:
    _, occurrence = with_history()
    Occurrence.objects.filter(pk=occurrence.pk).update(state=OccurrenceState.FAILED)
    url = reverse("admin:scheduler_app_occurrence_changelist")
    asked = changelist_action(django_app, url, admin_user, "replay", occurrence)
    assert asked.status_code == 200 and "runs again with the same key" in asked.text
    submit(form_on(asked), "confirm", note="fixed")
    event = OccurrenceAttempt.objects.get(occurrence=occurrence, kind=AttemptKind.REPLAY)
    assert event.by == "admin"
    from scheduler_app.safety import audit

    assert audit.trail([occurrence.schedule_id]).filter(action="replayed", by="admin").exists()


def test_the_occurrence_page_works_without_django_celery_results(
    client: Client, settings: Any
) -> None:
    """As in an install with only the ``[redis]`` extra: the app and its admin are absent."""
    _, occurrence = with_history()
    url = reverse("admin:scheduler_app_occurrence_change", args=[occurrence.pk])
    registry = admin.site._registry
    results = {m: a for m, a in registry.items() if m._meta.app_label == "django_celery_results"}
    for model in results:
        del registry[model]
    apps_without = [app for app in settings.INSTALLED_APPS if app != "django_celery_results"]
    settings.INSTALLED_APPS = apps_without
    try:
        response = client.get(url)
    finally:
        registry.update(results)
    assert response.status_code == 200
    assert "django-celery-results is not installed" in response.content.decode()


# -- the monitoring page -----------------------------------------------------------------------


def beat(last_tick: datetime, **fields: Any) -> BeatHeartbeat:
    values = {"host": "beat-1", "pid": 42, "version": "1.0", "started_at": last_tick, **fields}
    return BeatHeartbeat.objects.create(last_tick_at=last_tick, **values)


def test_the_monitoring_page_shows_beat_liveness_and_switches(client: Client) -> None:
    now = timezone.now()
    beat(now - timedelta(seconds=5))
    beat(now - timedelta(hours=2), host="old-beat", last_error="OperationalError: gone")
    switch_on(KillSwitchScope.TASK, "demo.ping", reason="bad deploy")
    page = client.get(MONITORING).content.decode()
    assert 'sched-ok">alive</span></span> beat: 1 beat(s) alive' in page
    beats = page[page.index('id="sched-beats"') :]
    assert "old-beat" in beats and ">stale</span>" in beats and "OperationalError" in beats
    switches = page[page.index('id="sched-switches"') :]
    assert "demo.ping" in switches and "bad deploy" in switches and "root" in switches


def test_no_beat_is_a_stale_card(client: Client) -> None:
    page = client.get(MONITORING).content.decode()
    assert 'sched-bad">stale</span></span> beat: no beat has ever ticked' in page


def test_the_monitoring_page_is_scoped_for_a_tenants_staff() -> None:
    schedule("acme job", tenant="acme", task="demo.ping")
    schedule("globex job", tenant="globex", task="demo.digest")
    switch_on(KillSwitchScope.TENANT, "globex", reason="globex incident")
    switch_on(KillSwitchScope.TASK, "demo.digest", reason="globex task")
    switch_on(KillSwitchScope.TENANT, "acme", reason="acme incident")
    switch_on(KillSwitchScope.GLOBAL, reason="everything")
    beat(timezone.now(), host="secret-host", last_error="globex payload error")
    acme = client_for(staff("acme", "view_schedule", tenants=("acme",)))
    page = acme.get(MONITORING).content.decode()
    assert "acme incident" in page and "everything" in page
    assert "globex incident" not in page and "globex task" not in page
    assert "1 beat(s) alive" in page  # liveness for everyone
    assert "secret-host" not in page and "globex payload error" not in page


def test_the_monitoring_page_shows_instants_in_the_one_format(client: Client) -> None:
    target = schedule("late")
    due = timezone.now().replace(microsecond=0) - timedelta(hours=2)
    Schedule.objects.filter(pk=target.pk).update(next_run_at=due)
    page = client.get(MONITORING).content.decode()
    assert f"next run was {display.instant_text(due, 'UTC')}" in page


def test_a_replay_of_a_selection_that_is_not_an_id_is_a_message(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    _, occurrence = with_history()
    Occurrence.objects.filter(pk=occurrence.pk).update(state=OccurrenceState.FAILED)
    url = reverse("admin:scheduler_app_occurrence_changelist")
    form = form_on(changelist_action(django_app, url, admin_user, "replay", occurrence))
    form["_selected_action"].force_value("nope")  # FORGED: the page only carries real ids
    done = form.submit("confirm")
    assert done.status_code == 302
    assert "is not an id" in django_app.get(url).text


def test_a_schedules_own_page_shows_the_switch_and_no_next_run(client: Client) -> None:
    target = schedule("switched", tenant="acme")
    switch_on(KillSwitchScope.TENANT, "acme")
    page = client.get(reverse("admin:scheduler_app_schedule_change", args=[target.pk]))
    model_admin = page.context["adminform"].model_admin
    assert ">kill switch</span>" in str(model_admin.status_text(target))
    assert model_admin.next_run_text(target) == "-"


def test_the_monitoring_lateness_reads_scheduled_and_catch_up_runs_only() -> None:
    now = timezone.now().replace(microsecond=0)
    clock = FakeClock(now - timedelta(hours=2))
    target = services.create_schedule(task="demo.ping", kind="interval", rule="60s", clock=clock)
    clock.set(now)
    services.backfill(
        target, start=now - timedelta(hours=2), end=now - timedelta(minutes=30), clock=clock
    )
    Occurrence.objects.update(dispatched_at=now)  # every backfilled slot handed off just now
    assert [row.count for row in window_rows(Occurrence.objects.all(), now)] == [0, 0]


def test_an_unmigrated_results_table_reads_as_no_result(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django_celery_results.models import TaskResult

    target = services.create_schedule(task="demo.ping", kind="interval", rule="60s")
    occurrence = services.run_now(target.pk)

    def not_migrated(*args: object, **kwargs: object) -> None:
        raise ProgrammingError('relation "django_celery_results_taskresult" does not exist')

    monkeypatch.setattr(TaskResult.objects, "filter", not_migrated)
    assert occurrence.task_result is None
    page = client.get(reverse("admin:scheduler_app_occurrence_change", args=[occurrence.pk]))
    assert page.status_code == 200
