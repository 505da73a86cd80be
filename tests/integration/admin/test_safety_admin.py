"""Kill switches, their audit, beat heartbeats, quotas and approval from the admin."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django_webtest import DjangoTestApp  # type: ignore[import-untyped]

from scheduler_app import services
from scheduler_app.models import (
    BeatHeartbeat,
    KillSwitch,
    KillSwitchEvent,
    ScheduleStatus,
)
from tests.integration.admin.support import (
    changelist_action,
    client_for,
    forged_post,
    form_on,
    model_form,
    page_errors,
    staff,
    submit,
)

pytestmark = pytest.mark.django_db

SWITCHES = reverse("admin:scheduler_app_killswitch_changelist")
SCHEDULES = reverse("admin:scheduler_app_schedule_changelist")


def operator() -> User:
    """Global and task switches stop every tenant's work: a user of all tenants turns them."""
    return User.objects.create_superuser("ops", "ops@example.com", "pw")


def test_turning_a_kill_switch_on_and_off_in_the_admin_is_audited_with_the_user(
    django_app: DjangoTestApp,
) -> None:
    ops = operator()
    browser = client_for(ops)
    add = reverse("admin:scheduler_app_killswitch_add")
    form = model_form(django_app, add, ops, "killswitch")
    response = submit(
        form, "_save", scope="task", target="demo.ping", enabled=True, reason="runaway mails"
    )
    assert response.status_code == 302, page_errors(response)
    switch = KillSwitch.objects.get()
    assert (switch.scope, switch.target, switch.enabled) == ("task", "demo.ping", True)
    assert (switch.changed_by, switch.reason) == ("ops", "runaway mails")

    change = reverse("admin:scheduler_app_killswitch_change", args=[switch.pk])
    form = model_form(django_app, change, ops, "killswitch")
    response = submit(form, "_save", enabled=False, reason="fixed in 1.2.3")  # unticked: off
    assert response.status_code == 302, page_errors(response)
    switch.refresh_from_db()
    assert switch.enabled is False
    audit = list(KillSwitchEvent.objects.order_by("at").values_list("enabled", "by", "reason"))
    assert audit == [(True, "ops", "runaway mails"), (False, "ops", "fixed in 1.2.3")]
    assert "runaway mails" not in browser.get(SWITCHES).content.decode()  # shows the current


def test_a_kill_switch_needs_a_reason_and_cannot_be_deleted(django_app: DjangoTestApp) -> None:
    ops = operator()
    add = reverse("admin:scheduler_app_killswitch_add")
    form = model_form(django_app, add, ops, "killswitch")
    response = submit(form, "_save", scope="global", target="", enabled=True, reason="")
    assert response.status_code == 200 and not KillSwitch.objects.exists()
    saved = submit(form_on(response, "killswitch_form"), "_save", reason="incident 7")
    assert saved.status_code == 302, page_errors(saved)
    switch = KillSwitch.objects.get()
    delete = reverse("admin:scheduler_app_killswitch_delete", args=[switch.pk])
    assert django_app.get(delete, user=ops, expect_errors=True).status_code == 403  # no page
    refused = forged_post(django_app, delete, ops, {"post": "yes"}, expect_errors=True)
    assert refused.status_code == 403
    assert KillSwitch.objects.filter(pk=switch.pk).exists()


def test_heartbeats_and_the_audit_are_read_only() -> None:
    browser = client_for(
        staff("watcher", "view_beatheartbeat", "add_beatheartbeat", "view_killswitchevent")
    )
    assert browser.get(reverse("admin:scheduler_app_beatheartbeat_changelist")).status_code == 200
    assert browser.get(reverse("admin:scheduler_app_beatheartbeat_add")).status_code == 403
    audit = reverse("admin:scheduler_app_killswitchevent_changelist")
    assert browser.get(audit).status_code == 200
    assert not BeatHeartbeat.objects.exists()


def test_approving_from_the_list_needs_the_permission(
    settings: object, django_app: DjangoTestApp
) -> None:
    settings.SCHEDULER_APPROVAL_TASKS = ("demo.ping",)  # type: ignore[attr-defined]
    held = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    assert held.status == ScheduleStatus.AWAITING_APPROVAL
    confirmed = {
        "action": "approve_selected",
        "_selected_action": [held.pk],
        "confirm": "1",
        "reason": "reviewed",
        f"version_{held.pk}": held.version,
    }
    viewer = staff("viewer", "view_schedule", "change_schedule")
    assert "approve_selected" not in django_app.get(SCHEDULES, user=viewer).text
    # FORGED: the viewer's list offers no approve action; the confirmation posted by hand.
    forged_post(django_app, SCHEDULES, viewer, confirmed)
    held.refresh_from_db()
    assert held.status == ScheduleStatus.AWAITING_APPROVAL

    approver = staff("lead", "view_schedule", "approve_schedule")
    assert "approve_selected" in django_app.get(SCHEDULES, user=approver).text
    page = changelist_action(django_app, SCHEDULES, approver, "approve_selected", held)
    assert "are you sure?" in page.text  # the confirmation page, nothing approved
    held.refresh_from_db()
    assert held.status == ScheduleStatus.AWAITING_APPROVAL
    submit(form_on(page), "confirm", reason="reviewed")
    held.refresh_from_db()
    assert held.status == ScheduleStatus.ACTIVE
    assert (held.approved_by, held.approved_version) == ("lead", held.version)


def test_a_beats_last_error_is_shown_only_to_users_of_all_tenants() -> None:
    now = timezone.now()
    BeatHeartbeat.objects.create(
        host="h",
        pid=1,
        version="x",
        started_at=now,
        last_tick_at=now,
        last_error="schedule of tenant b failed",
    )
    page = reverse("admin:scheduler_app_beatheartbeat_changelist")
    tenant_staff = client_for(staff("watcher", "view_beatheartbeat"))
    assert "tenant b failed" not in tenant_staff.get(page).content.decode()
    root = User.objects.create_superuser("root", "root@example.com", "x")
    everyone = Client()
    everyone.force_login(root)
    assert "tenant b failed" in everyone.get(page).content.decode()
