"""The integrity guarantees, attacked through admin POSTs by a limited staff account.

Each page decides nothing itself: the service refuses, and the page shows the refusal as a
message or a field error (never an HTTP 500).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse
from django_webtest import DjangoTestApp  # type: ignore[import-untyped]
from webtest import Form, TestResponse  # type: ignore[import-untyped]

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
from tests.integration.admin.support import (
    A_NEW_SCHEDULE,
    ADD_URL,
    change_url,
    changelist_action,
    client_for,
    confirm_form,
    fill,
    forge,
    forged_post,
    form_errors,
    form_on,
    model_form,
    page_errors,
    schedule_form,
    staff,
    submit,
)
from tests.integration.support import START

pytestmark = pytest.mark.django_db

LIST = reverse("admin:scheduler_app_schedule_changelist")
ADD = ADD_URL
SWITCH_ADD = reverse("admin:scheduler_app_killswitch_add")
SWITCH_EVENTS = reverse("admin:scheduler_app_killswitchevent_changelist")
QUOTAS = reverse("admin:scheduler_app_tenantquota_changelist")
SWITCH_PERMISSIONS = ("add_killswitch", "change_killswitch", "view_killswitch")
QUOTA_PERMISSIONS = ("add_tenantquota", "change_tenantquota", "view_tenantquota")


def url(name: str, schedule: Schedule) -> str:
    return reverse(f"admin:scheduler_app_schedule_{name}", args=[schedule.pk])


def shown(response: TestResponse) -> str:
    return str(response.text)


def root() -> User:
    return User.objects.create_superuser("root", "root@example.com", "pw")


def add_schedule(app: DjangoTestApp, user: User, **fields: Any) -> TestResponse:
    """The add page's form as rendered, a usual schedule typed in with these changes, saved.
    (django-webtest raises on an HTTP 500, so a crash fails the test.)"""
    return submit(schedule_form(app, ADD, user), "_save", **{**A_NEW_SCHEDULE, **fields})


def forged_bulk(app: DjangoTestApp, url: str, user: User, action: str) -> TestResponse:
    """The change list as rendered, the action chosen and the first row ticked, then tampered:
    FORGED, the row's id replaced by text that is no id, and the confirmation pressed with the
    list's own request (the list has no such button)."""
    form = form_on(app.get(url, user=user), "changelist-form")
    fill(form, action=action)
    box = form.fields["_selected_action"][0]
    box.checked = True
    box.force_value("nope")  # FORGED: the page only renders real ids
    forge(form, confirm="1")  # FORGED: skips the confirmation page
    return form.submit("index")


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


def test_a_backfill_of_a_schedule_awaiting_approval_is_refused(
    django_app: DjangoTestApp, held: Schedule
) -> None:
    runner = staff("runner", "view_schedule", "run_schedule", tenants=("acme",))
    form = confirm_form(django_app, url("backfill", held), runner)
    window = {"start": "2026-01-01T00:00", "end": "2026-01-05T23:59", "overlap": "buffer_all"}
    page = submit(form, "plan", **window)
    assert page.status_code == 200
    assert "approv" in shown(page)
    refused = form_on(page)
    assert "confirm" not in refused.fields  # the refused plan offers no confirmation...
    forge(refused, confirm="1")  # ...FORGED: the confirmation pressed anyway
    page = refused.submit()
    assert page.status_code == 200
    assert "approv" in shown(page)
    assert not Occurrence.objects.exists()


def test_the_approve_page_shows_what_is_approved_and_asks_for_a_reason(
    django_app: DjangoTestApp, held: Schedule
) -> None:
    approver = staff("lead", "view_schedule", "approve_schedule", tenants=("acme",))
    change = shown(django_app.get(change_url(held), user=approver))
    assert f'href="{url("approve", held)}"' in change
    form = confirm_form(django_app, url("approve", held), approver)
    page = shown(form.response)
    for text in ("version", "demo.ping", "&quot;n&quot;: 1", "At 08:00", "next runs", "reason"):
        assert text in page, text
    assert f'name="version_{held.pk}" value="1"' in page
    refused = submit(form, "confirm")  # the reason left empty
    assert refused.status_code == 200 and "This field is required" in shown(refused)
    held.refresh_from_db()
    assert held.status == ScheduleStatus.AWAITING_APPROVAL


def test_approving_an_older_version_than_the_current_one_is_refused(
    django_app: DjangoTestApp, held: Schedule
) -> None:
    approver = staff("lead", "view_schedule", "approve_schedule", tenants=("acme",))
    looked = confirm_form(django_app, url("approve", held), approver)
    assert f'value="{held.version}"' in shown(looked.response)
    from_list = form_on(changelist_action(django_app, LIST, approver, "approve_selected", held))
    # Someone edits the schedule between the look and the click: new kwargs.
    services.update_schedule(held.pk, expected_version=held.version, kwargs={"n": 1000})
    done = submit(looked, "confirm", reason="reviewed").maybe_follow()
    assert "you approved version 1" in shown(done) or "version 2" in shown(done)
    held.refresh_from_db()
    assert (held.status, held.approved_version) == (ScheduleStatus.AWAITING_APPROVAL, None)
    # From the list, too: the POST carries the version shown, never "whatever is current".
    submit(from_list, "confirm", reason="reviewed")
    held.refresh_from_db()
    assert held.status == ScheduleStatus.AWAITING_APPROVAL
    again = confirm_form(django_app, url("approve", held), approver)
    assert again[f"version_{held.pk}"].value == "2"  # the page now shows version 2
    submit(again, "confirm", reason="reviewed")
    held.refresh_from_db()
    assert (held.status, held.approved_version, held.approved_by) == (
        ScheduleStatus.ACTIVE,
        2,
        "lead",
    )


def test_an_approve_post_without_the_version_shown_approves_nothing(
    django_app: DjangoTestApp, held: Schedule
) -> None:
    approver = staff("lead", "view_schedule", "approve_schedule", tenants=("acme",))
    for version in ("", "nope", "-1", "9" * 30):
        form = confirm_form(django_app, url("approve", held), approver)
        form[f"version_{held.pk}"].force_value(version)  # FORGED: not the version shown
        done = submit(form, "confirm", reason="ok").maybe_follow()
        assert done.status_code == 200
    held.refresh_from_db()
    assert held.status == ScheduleStatus.AWAITING_APPROVAL


def test_approving_needs_the_permission_even_when_the_page_is_posted(
    django_app: DjangoTestApp, held: Schedule
) -> None:
    editor = staff("editor", "view_schedule", "change_schedule", tenants=("acme",))
    page = shown(django_app.get(change_url(held), user=editor))
    assert 'data-action="approve"' not in page  # the button is hidden...
    # ...and the confirmation posted anyway is refused. FORGED: no button leads to the approve
    # page, so the POST is made by hand. Refused by the page itself (403, once it refuses a
    # user without approve_schedule: issue 35, tests/.../test_approve_permission.py) or else
    # by the service, which says why.
    done = forged_post(
        django_app,
        url("approve", held),
        editor,
        {"confirm": "1", "reason": "me", f"version_{held.pk}": str(held.version)},
        expect_errors=True,
    )
    assert done.status_code == 403 or "lacks the permission" in shown(done.maybe_follow())
    held.refresh_from_db()
    assert held.status == ScheduleStatus.AWAITING_APPROVAL


# -- owners ----------------------------------------------------------------------------------


def test_a_user_without_assign_owner_cannot_blank_the_owner(django_app: DjangoTestApp) -> None:
    editor = staff("editor", "add_schedule", "view_schedule", "change_schedule", "run_schedule")
    schedule = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 8 * * *", user=editor
    )
    assert schedule.owner == editor
    page = schedule_form(django_app, change_url(schedule), editor)
    form = page.response.context["adminform"].form
    assert form.fields["owner"].disabled  # shown, not editable
    assert "owner" not in page.fields  # so a browser does not send it
    forge(page, owner="")  # FORGED: a blank owner posted anyway
    submit(page, "_save", name="x")
    schedule.refresh_from_db()
    assert schedule.owner == editor
    with pytest.raises(Exception, match="needs an owner"):
        services.update_schedule(
            schedule.pk, expected_version=schedule.version, owner=None, user=editor
        )


def test_blanking_the_owner_with_assign_owner_is_a_field_error(django_app: DjangoTestApp) -> None:
    lead = staff("lead", "add_schedule", "view_schedule", "change_schedule", "assign_owner")
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *", user=lead)
    form = schedule_form(django_app, change_url(schedule), lead)
    response = submit(form, "_save", owner="", name="x")  # the list's "---------"
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "needs an owner" in errors["owner"][0]
    schedule.refresh_from_db()
    assert schedule.owner == lead


def test_assign_owner_offers_and_saves_only_same_tenant_staff(django_app: DjangoTestApp) -> None:
    lead = staff("lead", "view_schedule", "add_schedule", "assign_owner", tenants=("acme",))
    colleague = staff("colleague", "run_schedule", tenants=("acme",))
    stranger = staff("stranger", "run_schedule", tenants=("globex",))
    superuser = root()
    page = django_app.get(ADD, user=lead)
    form = page.context["adminform"].form
    assert form["owner"].value() == lead.pk  # the add form starts with the editor
    offered = set(form.fields["owner"].queryset.values_list("username", flat=True))
    assert offered == {"lead", "colleague"}
    for other in (stranger, superuser):
        shown_form = schedule_form(django_app, ADD, lead)
        shown_form["owner"].force_value(str(other.pk))  # FORGED: an owner the list does not offer
        refused = submit(shown_form, "_save", **A_NEW_SCHEDULE, tenant="acme")
        assert refused.status_code == 200 and "owner" in refused.context["adminform"].form.errors
    assert not Schedule.objects.exists()
    # Offered, but a schedule made for another owner runs with that owner's rights: without
    # run_schedule the save is refused, saying what it takes.
    refused = add_schedule(django_app, lead, tenant="acme", owner=colleague.pk)
    assert refused.status_code == 200 and "run_schedule" in refused.text
    assert not Schedule.objects.exists()
    lead.user_permissions.add(Permission.objects.get(codename="run_schedule"))
    saved = add_schedule(django_app, lead, tenant="acme", owner=colleague.pk)
    assert saved.status_code == 302, page_errors(saved)
    assert Schedule.objects.get().owner == colleague


# -- kill switches and quotas ------------------------------------------------------------------


def test_tenant_staff_cannot_turn_a_global_or_another_tenants_switch(
    django_app: DjangoTestApp,
) -> None:
    acme = staff("acme_ops", *SWITCH_PERMISSIONS, tenants=("acme",))
    form = django_app.get(SWITCH_ADD, user=acme).context["adminform"].form
    assert [value for value, _ in form.fields["scope"].choices] == ["tenant"]
    assert [value for value, _ in form.fields["target"].choices] == ["acme"]
    for scope, target in (("global", ""), ("task", "demo.ping"), ("tenant", "globex")):
        shown_form = model_form(django_app, SWITCH_ADD, acme, "killswitch")
        shown_form["scope"].force_value(scope)  # FORGED: choices the page does not offer
        shown_form["target"].force_value(target)
        submit(shown_form, "_save", enabled=True, reason="x")
    assert not KillSwitch.objects.exists() and not KillSwitchEvent.objects.exists()
    shown_form = model_form(django_app, SWITCH_ADD, acme, "killswitch")
    submit(shown_form, "_save", scope="tenant", target="acme", enabled=True, reason="y")
    assert list(KillSwitch.objects.values_list("scope", "target", "changed_by")) == [
        ("tenant", "acme", "acme_ops")
    ]


def test_a_switch_the_service_refuses_is_a_message_not_an_error_page(
    django_app: DjangoTestApp,
) -> None:
    # The form offers acme; the service wants change_killswitch, which this user lacks.
    adder = staff("adder", "add_killswitch", "view_killswitch", tenants=("acme",))
    form = model_form(django_app, SWITCH_ADD, adder, "killswitch")
    data = {"scope": "tenant", "target": "acme", "enabled": True, "reason": "x"}
    refused = submit(form, "_save", **data).maybe_follow()
    assert refused.status_code == 200
    assert "The switch was not changed" in shown(refused) and "change_killswitch" in shown(refused)
    assert not KillSwitch.objects.exists() and not KillSwitchEvent.objects.exists()


def test_another_tenants_switch_cannot_be_opened(django_app: DjangoTestApp) -> None:
    set_kill_switch("tenant", "globex", enabled=True, user=root(), reason="incident", now=START)
    switch = KillSwitch.objects.get()
    acme = staff("watcher", *SWITCH_PERMISSIONS, tenants=("acme",))
    change = reverse("admin:scheduler_app_killswitch_change", args=[switch.pk])
    assert django_app.get(change, user=acme).status_code == 302  # "does not exist" redirect
    # FORGED: the page never opens for acme, so no form; the edit posted by hand.
    forged_post(django_app, change, acme, {"reason": "off by acme"})
    switch.refresh_from_db()
    assert switch.enabled


def test_tenant_staff_see_only_their_switch_events_and_quotas() -> None:
    superuser = root()
    for tenant in ("acme", "globex"):
        set_kill_switch(
            "tenant", tenant, enabled=True, user=superuser, reason=f"{tenant} incident", now=START
        )
        TenantQuota.objects.create(tenant=tenant, max_active_schedules=5)
    acme = client_for(
        staff("acme_ops", "view_killswitchevent", *QUOTA_PERMISSIONS, tenants=("acme",))
    )
    events = shown(acme.get(SWITCH_EVENTS))
    assert "acme incident" in events and "globex incident" not in events
    quotas = acme.get(QUOTAS)
    assert [q.tenant for q in quotas.context["cl"].result_list] == ["acme"]


def test_tenant_staff_cannot_change_a_quota(django_app: DjangoTestApp) -> None:
    mine = TenantQuota.objects.create(tenant="acme", max_active_schedules=5)
    theirs = TenantQuota.objects.create(tenant="globex", max_active_schedules=5)
    acme = staff("acme_ops", *QUOTA_PERMISSIONS, "delete_tenantquota", tenants=("acme",))
    mine_url = reverse("admin:scheduler_app_tenantquota_change", args=[mine.pk])
    read_only = model_form(django_app, mine_url, acme, "tenantquota")
    assert "max_active_schedules" not in read_only.fields  # shown read-only
    forge(read_only, tenant="acme", max_active_schedules=0)  # FORGED: fields it does not render
    assert read_only.submit(expect_errors=True).status_code == 403
    theirs_url = reverse("admin:scheduler_app_tenantquota_change", args=[theirs.pk])
    assert django_app.get(theirs_url, user=acme).status_code == 302  # "does not exist"
    # FORGED: the page never opens for acme, so no form; the edit posted by hand.
    forged_post(
        django_app,
        theirs_url,
        acme,
        {"tenant": "globex", "max_active_schedules": 0},
        expect_errors=True,
    )
    add = reverse("admin:scheduler_app_tenantquota_add")
    assert django_app.get(add, user=acme, expect_errors=True).status_code == 403
    # FORGED: the add page is refused, so no form.
    assert (
        forged_post(django_app, add, acme, {"tenant": "x"}, expect_errors=True).status_code == 403
    )
    assert "_selected_action" not in django_app.get(QUOTAS, user=acme).text  # no actions
    # FORGED: the list offers acme no action (and never shows globex's row).
    forged_post(
        django_app,
        QUOTAS,
        acme,
        {"action": "delete_selected", "_selected_action": [theirs.pk], "post": "yes"},
    )
    assert sorted(TenantQuota.objects.values_list("tenant", "max_active_schedules")) == [
        ("acme", 5),
        ("globex", 5),
    ]


def test_turning_a_switch_off_asks_for_a_new_reason(django_app: DjangoTestApp) -> None:
    superuser = root()
    add = model_form(django_app, SWITCH_ADD, superuser, "killswitch")
    submit(add, "_save", scope="global", target="", enabled=True, reason="outage")
    switch = KillSwitch.objects.get()
    change = reverse("admin:scheduler_app_killswitch_change", args=[switch.pk])
    shown_form = model_form(django_app, change, superuser, "killswitch")
    form = shown_form.response.context["adminform"].form
    assert form["reason"].value() in (None, "") and form.fields["reason"].required
    refused = submit(shown_form, "_save", enabled=False, reason="")  # off, with no reason
    assert refused.status_code == 200
    switch.refresh_from_db()
    assert switch.enabled
    again = form_on(refused, "killswitch_form")
    assert again["enabled"].value is None  # the untick is kept on the page shown again
    submit(again, "_save", reason="vendor fixed it")
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
def test_backfill_dates_at_the_ends_of_the_calendar_are_field_errors(
    django_app: DjangoTestApp, start: str, end: str
) -> None:
    schedule = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 6 * * *", timezone="Europe/Riga"
    )
    superuser = root()  # django-webtest raises on an HTTP 500: a crash fails the test
    form = confirm_form(django_app, url("backfill", schedule), superuser)
    page = submit(form, "plan", start=start, end=end, overlap="buffer_all")
    assert page.status_code == 200
    assert "out of range" in shown(page)
    refused: Form = form_on(page)
    assert "confirm" not in refused.fields  # the refused plan offers no confirmation...
    forge(refused, confirm="1")  # ...FORGED: the confirmation pressed anyway
    page = refused.submit()
    assert page.status_code == 200
    assert "out of range" in shown(page)
    run = submit(
        confirm_form(django_app, url("run", schedule), superuser), "confirm", window_start=start
    )
    assert run.status_code == 200 and "out of range" in shown(run)
    assert not Occurrence.objects.exists()


@pytest.mark.parametrize(
    "action", ["pause_selected", "resume_selected", "cancel_selected", "approve_selected"]
)
def test_a_bulk_action_on_a_selection_that_is_not_an_id_is_a_message(
    django_app: DjangoTestApp, action: str
) -> None:
    services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    done = forged_bulk(django_app, LIST, root(), action)
    assert done.status_code == 302
    assert "is not an id" in shown(django_app.get(LIST))
    assert Schedule.objects.get().status == ScheduleStatus.ACTIVE


def test_a_quota_bulk_action_on_a_bad_selection_is_a_message(django_app: DjangoTestApp) -> None:
    TenantQuota.objects.create(tenant="acme", max_active_schedules=5)  # a row to tick
    form = form_on(django_app.get(QUOTAS, user=root()), "changelist-form")
    fill(form, action="delete_selected")
    box = form.fields["_selected_action"][0]
    box.checked = True
    box.force_value("nope")  # FORGED: the page only renders real ids
    done = form.submit("index")
    assert done.status_code == 302


@pytest.mark.parametrize("field", ["kwargs", "options"])
@pytest.mark.parametrize("text", ['{"a": "\\ud800"}', '{"\\udfff": 1}'])
def test_a_lone_surrogate_in_json_is_a_field_error(
    django_app: DjangoTestApp, field: str, text: str
) -> None:
    superuser = root()  # django-webtest raises on an HTTP 500: a crash fails the test
    response = add_schedule(django_app, superuser, **{field: text})
    assert response.status_code == 200
    assert "surrogate" in form_errors(response)[field][0]
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    form = schedule_form(django_app, change_url(schedule), superuser)
    change = submit(form, "_save", **{field: text})
    assert change.status_code == 200
    assert not Schedule.objects.exclude(pk=schedule.pk).exists()


def test_a_list_in_kwargs_points_at_args_and_args_are_saved(django_app: DjangoTestApp) -> None:
    superuser = root()
    response = add_schedule(django_app, superuser, kwargs="[1]")
    assert response.status_code == 200
    error = form_errors(response)["kwargs"][0]
    assert "put positional arguments in args" in error and '{"n": 1}' in error
    refused = add_schedule(django_app, superuser, args='{"n": 1}')
    assert "must be a JSON list" in form_errors(refused)["args"][0]
    assert not Schedule.objects.exists()
    saved = add_schedule(django_app, superuser, args='[1, "eu"]')
    assert saved.status_code == 302, page_errors(saved)
    assert Schedule.objects.get().args == [1, "eu"]
