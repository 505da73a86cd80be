"""The integrity guarantees, attacked through admin POSTs by a limited staff account.

Each page decides nothing itself: the service refuses, and the page shows the refusal as a
message or a field error (never an HTTP 500).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from scheduler_app import services
from scheduler_app.models import (
    KillSwitch,
    KillSwitchEvent,
    Occurrence,
    Schedule,
    ScheduleStatus,
    TenantQuota,
)
from scheduler_app.safety.killswitch import set_kill_switch
from tests.integration.admin.support import client_for, staff
from tests.integration.support import START, admin_form

pytestmark = pytest.mark.django_db

LIST = reverse("admin:scheduler_app_schedule_changelist")
ADD = reverse("admin:scheduler_app_schedule_add")
SWITCH_ADD = reverse("admin:scheduler_app_killswitch_add")
SWITCH_EVENTS = reverse("admin:scheduler_app_killswitchevent_changelist")
QUOTAS = reverse("admin:scheduler_app_tenantquota_changelist")
SWITCH_PERMISSIONS = ("add_killswitch", "change_killswitch", "view_killswitch")
QUOTA_PERMISSIONS = ("add_tenantquota", "change_tenantquota", "view_tenantquota")


def url(name: str, schedule: Schedule) -> str:
    return reverse(f"admin:scheduler_app_schedule_{name}", args=[schedule.pk])


def change_url(schedule: Schedule) -> str:
    return reverse("admin:scheduler_app_schedule_change", args=[schedule.pk])


def shown(response: Any) -> str:
    return response.content.decode()


def raising_client(user: User) -> Client:
    browser = Client(raise_request_exception=False)
    browser.force_login(user)
    return browser


@pytest.fixture
def held(settings: Any) -> Schedule:
    """A schedule of a task that needs approval, in tenant acme, awaiting it."""
    settings.SCHEDULER_APPROVAL_TASKS = ("demo.ping",)
    schedule = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 8 * * *", tenant="acme", kwargs={"n": 1}
    )
    assert schedule.status == ScheduleStatus.AWAITING_APPROVAL
    return schedule


# -- approval --------------------------------------------------------------------------------


def test_a_backfill_of_a_schedule_awaiting_approval_is_refused(held: Schedule) -> None:
    runner = client_for(staff("runner", "view_schedule", "run_schedule", tenants=("acme",)))
    form = {"start": "2026-01-01T00:00", "end": "2026-01-05T23:59", "overlap": "buffer_all"}
    for stage in ("plan", "confirm"):
        page = runner.post(url("backfill", held), {**form, stage: "1"})
        assert page.status_code == 200
        assert "approv" in shown(page)
    assert not Occurrence.objects.exists()


def test_the_approve_page_shows_what_is_approved_and_asks_for_a_reason(held: Schedule) -> None:
    approver = client_for(staff("lead", "view_schedule", "approve_schedule", tenants=("acme",)))
    change = shown(approver.get(change_url(held)))
    assert f'href="{url("approve", held)}"' in change
    page = shown(approver.get(url("approve", held)))
    for text in ("version", "demo.ping", "&quot;n&quot;: 1", "At 08:00", "next runs", "reason"):
        assert text in page, text
    assert f'name="version_{held.pk}" value="1"' in page
    refused = approver.post(url("approve", held), {"confirm": "1", f"version_{held.pk}": "1"})
    assert refused.status_code == 200 and "This field is required" in shown(refused)
    held.refresh_from_db()
    assert held.status == ScheduleStatus.AWAITING_APPROVAL


def test_approving_an_older_version_than_the_current_one_is_refused(held: Schedule) -> None:
    approver = client_for(staff("lead", "view_schedule", "approve_schedule", tenants=("acme",)))
    looked = {"confirm": "1", "reason": "reviewed", f"version_{held.pk}": str(held.version)}
    assert f'value="{held.version}"' in shown(approver.get(url("approve", held)))
    # Someone edits the schedule between the look and the click: new kwargs.
    services.update_schedule(held.pk, expected_version=held.version, kwargs={"n": 1000})
    done = approver.post(url("approve", held), looked, follow=True)
    assert "you approved version 1" in shown(done) or "version 2" in shown(done)
    held.refresh_from_db()
    assert (held.status, held.approved_version) == (ScheduleStatus.AWAITING_APPROVAL, None)
    # From the list, too: the POST carries the version shown, never "whatever is current".
    approver.post(LIST, {**looked, "action": "approve_selected", "_selected_action": [held.pk]})
    held.refresh_from_db()
    assert held.status == ScheduleStatus.AWAITING_APPROVAL
    approver.post(url("approve", held), {**looked, f"version_{held.pk}": "2"})
    held.refresh_from_db()
    assert (held.status, held.approved_version, held.approved_by) == (
        ScheduleStatus.ACTIVE,
        2,
        "lead",
    )


def test_an_approve_post_without_the_version_shown_approves_nothing(held: Schedule) -> None:
    approver = client_for(staff("lead", "view_schedule", "approve_schedule", tenants=("acme",)))
    for version in ("", "nope", "-1", "9" * 30):
        done = approver.post(
            url("approve", held),
            {"confirm": "1", "reason": "ok", f"version_{held.pk}": version},
            follow=True,
        )
        assert done.status_code == 200
    held.refresh_from_db()
    assert held.status == ScheduleStatus.AWAITING_APPROVAL


def test_approving_needs_the_permission_even_when_the_page_is_posted(held: Schedule) -> None:
    editor = client_for(staff("editor", "view_schedule", "change_schedule", tenants=("acme",)))
    page = shown(editor.get(change_url(held)))
    assert 'data-action="approve"' not in page  # the button is hidden...
    done = editor.post(  # ...and the service refuses the page posted anyway
        url("approve", held),
        {"confirm": "1", "reason": "me", f"version_{held.pk}": str(held.version)},
        follow=True,
    )
    assert "lacks the permission" in shown(done)
    held.refresh_from_db()
    assert held.status == ScheduleStatus.AWAITING_APPROVAL


# -- owners ----------------------------------------------------------------------------------


def test_a_user_without_assign_owner_cannot_blank_the_owner() -> None:
    editor = staff("editor", "add_schedule", "view_schedule", "change_schedule", "run_schedule")
    schedule = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 8 * * *", user=editor
    )
    assert schedule.owner == editor
    browser = client_for(editor)
    form = browser.get(change_url(schedule)).context["adminform"].form
    assert form.fields["owner"].disabled  # shown, not editable
    browser.post(change_url(schedule), admin_form(owner="", expected_version=1, name="x"))
    schedule.refresh_from_db()
    assert schedule.owner == editor
    with pytest.raises(Exception, match="needs an owner"):
        services.update_schedule(
            schedule.pk, expected_version=schedule.version, owner=None, user=editor
        )


def test_blanking_the_owner_with_assign_owner_is_a_field_error() -> None:
    lead = staff("lead", "add_schedule", "view_schedule", "change_schedule", "assign_owner")
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *", user=lead)
    response = client_for(lead).post(
        change_url(schedule), admin_form(owner="", expected_version=1, name="x")
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "needs an owner" in errors["owner"][0]
    schedule.refresh_from_db()
    assert schedule.owner == lead


def test_assign_owner_offers_and_saves_only_same_tenant_staff() -> None:
    lead = staff("lead", "view_schedule", "add_schedule", "assign_owner", tenants=("acme",))
    colleague = staff("colleague", "run_schedule", tenants=("acme",))
    stranger = staff("stranger", "run_schedule", tenants=("globex",))
    root = User.objects.create_superuser("root", "root@example.com", "pw")
    browser = client_for(lead)
    page = browser.get(ADD)
    form = page.context["adminform"].form
    assert form["owner"].value() == lead.pk  # the add form starts with the editor
    offered = set(form.fields["owner"].queryset.values_list("username", flat=True))
    assert offered == {"lead", "colleague"}
    for other in (stranger, root):
        refused = browser.post(ADD, admin_form(tenant="acme", owner=other.pk))
        assert refused.status_code == 200 and "owner" in refused.context["adminform"].form.errors
    assert not Schedule.objects.exists()
    saved = browser.post(ADD, admin_form(tenant="acme", owner=colleague.pk))
    assert saved.status_code == 302, saved.context["adminform"].form.errors
    assert Schedule.objects.get().owner == colleague


# -- kill switches and quotas ------------------------------------------------------------------


def test_tenant_staff_cannot_turn_a_global_or_another_tenants_switch() -> None:
    acme = staff("acme_ops", *SWITCH_PERMISSIONS, tenants=("acme",))
    browser = client_for(acme)
    form = browser.get(SWITCH_ADD).context["adminform"].form
    assert [value for value, _ in form.fields["scope"].choices] == ["tenant"]
    assert [value for value, _ in form.fields["target"].choices] == ["acme"]
    for scope, target in (("global", ""), ("task", "demo.ping"), ("tenant", "globex")):
        browser.post(SWITCH_ADD, {"scope": scope, "target": target, "enabled": "on", "reason": "x"})
    assert not KillSwitch.objects.exists() and not KillSwitchEvent.objects.exists()
    browser.post(SWITCH_ADD, {"scope": "tenant", "target": "acme", "enabled": "on", "reason": "y"})
    assert list(KillSwitch.objects.values_list("scope", "target", "changed_by")) == [
        ("tenant", "acme", "acme_ops")
    ]


def test_a_switch_the_service_refuses_is_a_message_not_an_error_page() -> None:
    # The form offers acme; the service wants change_killswitch, which this user lacks.
    adder = client_for(staff("adder", "add_killswitch", "view_killswitch", tenants=("acme",)))
    data = {"scope": "tenant", "target": "acme", "enabled": "on", "reason": "x"}
    refused = adder.post(SWITCH_ADD, data, follow=True)
    assert refused.status_code == 200
    assert "The switch was not changed" in shown(refused) and "change_killswitch" in shown(refused)
    assert not KillSwitch.objects.exists() and not KillSwitchEvent.objects.exists()


def test_another_tenants_switch_cannot_be_opened() -> None:
    root = User.objects.create_superuser("root", "root@example.com", "pw")
    set_kill_switch("tenant", "globex", enabled=True, user=root, reason="incident", now=START)
    switch = KillSwitch.objects.get()
    acme = client_for(staff("watcher", *SWITCH_PERMISSIONS, tenants=("acme",)))
    change = reverse("admin:scheduler_app_killswitch_change", args=[switch.pk])
    assert acme.get(change).status_code == 302  # Django's "does not exist" redirect
    acme.post(change, {"reason": "off by acme"})
    switch.refresh_from_db()
    assert switch.enabled


def test_tenant_staff_see_only_their_switch_events_and_quotas() -> None:
    root = User.objects.create_superuser("root", "root@example.com", "pw")
    for tenant in ("acme", "globex"):
        set_kill_switch(
            "tenant", tenant, enabled=True, user=root, reason=f"{tenant} incident", now=START
        )
        TenantQuota.objects.create(tenant=tenant, max_active_schedules=5)
    acme = client_for(
        staff("acme_ops", "view_killswitchevent", *QUOTA_PERMISSIONS, tenants=("acme",))
    )
    events = shown(acme.get(SWITCH_EVENTS))
    assert "acme incident" in events and "globex incident" not in events
    quotas = acme.get(QUOTAS)
    assert [q.tenant for q in quotas.context["cl"].result_list] == ["acme"]


def test_tenant_staff_cannot_change_a_quota() -> None:
    mine = TenantQuota.objects.create(tenant="acme", max_active_schedules=5)
    theirs = TenantQuota.objects.create(tenant="globex", max_active_schedules=5)
    acme = client_for(
        staff("acme_ops", *QUOTA_PERMISSIONS, "delete_tenantquota", tenants=("acme",))
    )
    for quota in (mine, theirs):
        change = reverse("admin:scheduler_app_tenantquota_change", args=[quota.pk])
        acme.post(change, {"tenant": quota.tenant, "max_active_schedules": 0})
    assert (
        acme.post(reverse("admin:scheduler_app_tenantquota_add"), {"tenant": "x"}).status_code
        == 403
    )
    acme.post(QUOTAS, {"action": "delete_selected", "_selected_action": [theirs.pk], "post": "yes"})
    assert sorted(TenantQuota.objects.values_list("tenant", "max_active_schedules")) == [
        ("acme", 5),
        ("globex", 5),
    ]


def test_turning_a_switch_off_asks_for_a_new_reason() -> None:
    root = User.objects.create_superuser("root", "root@example.com", "pw")
    browser = client_for(root)
    browser.post(SWITCH_ADD, {"scope": "global", "target": "", "enabled": "on", "reason": "outage"})
    switch = KillSwitch.objects.get()
    change = reverse("admin:scheduler_app_killswitch_change", args=[switch.pk])
    form = browser.get(change).context["adminform"].form
    assert form["reason"].value() in (None, "") and form.fields["reason"].required
    refused = browser.post(change, {"reason": ""})  # enabled unticked: off, with no reason
    assert refused.status_code == 200
    switch.refresh_from_db()
    assert switch.enabled
    browser.post(change, {"reason": "vendor fixed it"})
    switch.refresh_from_db()
    assert (switch.enabled, switch.reason) == (False, "vendor fixed it")
    assert list(KillSwitchEvent.objects.order_by("at").values_list("enabled", "reason")) == [
        (True, "outage"),
        (False, "vendor fixed it"),
    ]


# -- no HTTP 500 -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "end"),
    [
        ("0001-01-01T00:00", "0001-01-02T00:00"),
        ("9999-12-31T00:00", "9999-12-31T23:59"),
        ("0001-01-01T00:00", "9999-12-31T23:59"),
    ],
)
def test_backfill_dates_at_the_ends_of_the_calendar_are_field_errors(start: str, end: str) -> None:
    schedule = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 6 * * *", timezone="Europe/Riga"
    )
    browser = raising_client(User.objects.create_superuser("root", "root@example.com", "pw"))
    for stage in ("plan", "confirm"):
        data = {"start": start, "end": end, "overlap": "buffer_all", stage: "1"}
        page = browser.post(url("backfill", schedule), data)
        assert page.status_code == 200
        assert "out of range" in shown(page)
    run = browser.post(url("run", schedule), {"confirm": "1", "window_start": start})
    assert run.status_code == 200 and "out of range" in shown(run)
    assert not Occurrence.objects.exists()


@pytest.mark.parametrize(
    "action", ["pause_selected", "resume_selected", "cancel_selected", "approve_selected"]
)
def test_a_bulk_action_on_a_selection_that_is_not_an_id_is_a_message(action: str) -> None:
    services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    browser = raising_client(User.objects.create_superuser("root", "root@example.com", "pw"))
    done = browser.post(LIST, {"action": action, "_selected_action": ["nope"], "confirm": "1"})
    assert done.status_code == 302
    assert "is not an id" in shown(browser.get(LIST))
    assert Schedule.objects.get().status == ScheduleStatus.ACTIVE


def test_a_quota_bulk_action_on_a_bad_selection_is_a_message() -> None:
    browser = raising_client(User.objects.create_superuser("root", "root@example.com", "pw"))
    done = browser.post(QUOTAS, {"action": "delete_selected", "_selected_action": ["nope"]})
    assert done.status_code == 302


@pytest.mark.parametrize("field", ["kwargs", "options"])
@pytest.mark.parametrize("text", ['{"a": "\\ud800"}', '{"\\udfff": 1}'])
def test_a_lone_surrogate_in_json_is_a_field_error(field: str, text: str) -> None:
    browser = raising_client(User.objects.create_superuser("root", "root@example.com", "pw"))
    response = browser.post(ADD, admin_form(**{field: text}))
    assert response.status_code == 200
    assert "surrogate" in response.context["adminform"].form.errors[field][0]
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    change = browser.post(change_url(schedule), admin_form(expected_version=1, **{field: text}))
    assert change.status_code == 200
    assert not Schedule.objects.exclude(pk=schedule.pk).exists()


def test_a_list_in_kwargs_points_at_args_and_args_are_saved() -> None:
    browser = client_for(User.objects.create_superuser("root", "root@example.com", "pw"))
    response = browser.post(ADD, admin_form(kwargs="[1]"))
    assert response.status_code == 200
    error = response.context["adminform"].form.errors["kwargs"][0]
    assert "put positional arguments in args" in error and '{"n": 1}' in error
    refused = browser.post(ADD, admin_form(args='{"n": 1}'))
    assert "must be a JSON list" in refused.context["adminform"].form.errors["args"][0]
    assert not Schedule.objects.exists()
    saved = browser.post(ADD, admin_form(args='[1, "eu"]'))
    assert saved.status_code == 302
    assert Schedule.objects.get().args == [1, "eu"]
