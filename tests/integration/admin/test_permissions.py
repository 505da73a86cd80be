"""Every admin action and delete checks its own permission; other tenants get 404.

The security review's findings, each reproduced: a view-only user resumed and cancelled, a
staff user without permissions deleted, a view-occurrence user replayed; a superuser could
not delete a schedule with history.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django_webtest import DjangoTestApp  # type: ignore[import-untyped]

from scheduler_app import services
from scheduler_app.models import Occurrence, OccurrenceState, Schedule, ScheduleStatus
from scheduler_app.safety.tenancy import TenantForbidden, allowed_tenants, tenants_for_user
from scheduler_app.services.operator import OperatorPermissionDenied
from tests.integration.admin.support import (
    changelist_action,
    client_for,
    confirm_form,
    delete_form,
    forged_post,
    form_on,
    staff,
    submit,
    with_history,
)

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:scheduler_app_schedule_changelist")
OCCURRENCES = reverse("admin:scheduler_app_occurrence_changelist")


def action_url(name: str, schedule: Schedule) -> str:
    return reverse(f"admin:scheduler_app_schedule_{name}", args=[schedule.pk])


def test_a_view_only_user_can_neither_resume_nor_cancel(django_app: DjangoTestApp) -> None:
    viewer = staff("viewer", "view_schedule")
    paused = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    services.pause_schedule(paused.pk)
    live = services.create_schedule(task="demo.ping", kind="cron", rule="0 9 * * *")

    assert "_selected_action" not in django_app.get(CHANGELIST, user=viewer).text  # no actions
    for action, target in (("resume_selected", paused), ("cancel_selected", live)):
        # FORGED: the viewer's list offers no action; the confirmation posted by hand.
        forged_post(
            django_app,
            CHANGELIST,
            viewer,
            {"action": action, "confirm": "1", "expected": 0, "_selected_action": [target.pk]},
        )
    for action, target in (("resume", paused), ("cancel", live), ("pause", live)):
        # No page for an action the user may not take (its summary of what it would do can
        # cost a search), and a confirmation posted to it by hand is refused the same way.
        url = action_url(action, target)
        assert django_app.get(url, user=viewer, expect_errors=True).status_code == 403
        forged = forged_post(
            django_app, url, viewer, {"confirm": "1", "expected": 0}, expect_errors=True
        )
        assert forged.status_code == 403, action
    paused.refresh_from_db()
    live.refresh_from_db()
    assert (paused.status, live.status) == (ScheduleStatus.PAUSED, ScheduleStatus.ACTIVE)


def test_the_action_menu_offers_only_what_the_user_may_do() -> None:
    services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    viewer = client_for(staff("viewer", "view_schedule")).get(CHANGELIST).content.decode()
    pauser = client_for(staff("pauser", "view_schedule", "pause_schedule")).get(CHANGELIST)
    assert "pause_selected" not in viewer and "cancel_selected" not in viewer
    assert "pause_selected" in pauser.content.decode()
    assert "cancel_selected" not in pauser.content.decode()


def test_a_staff_user_without_permissions_cannot_delete(django_app: DjangoTestApp) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    nobody = staff("nobody", "view_schedule")
    url = reverse("admin:scheduler_app_schedule_delete", args=[schedule.pk])
    assert django_app.get(url, user=nobody, expect_errors=True).status_code == 403
    # FORGED: the delete page is refused, so no form; the "Yes" posted by hand.
    assert (
        forged_post(django_app, url, nobody, {"post": "yes"}, expect_errors=True).status_code == 403
    )
    assert Schedule.objects.filter(pk=schedule.pk).exists()


def test_a_view_occurrence_user_cannot_replay(django_app: DjangoTestApp) -> None:
    schedule, occurrence = with_history()
    services.cancel_schedule(schedule.pk)
    Occurrence.objects.filter(pk=occurrence.pk).update(state=OccurrenceState.FAILED)
    looker = staff("looker", "view_occurrence", "view_schedule")
    assert 'value="replay"' not in django_app.get(OCCURRENCES, user=looker).text
    # FORGED: the looker's list offers no replay; the confirmation posted by hand.
    forged_post(
        django_app,
        OCCURRENCES,
        looker,
        {"action": "replay", "confirm": "1", "_selected_action": [occurrence.pk]},
    )
    occurrence.refresh_from_db()
    assert occurrence.state == OccurrenceState.FAILED


def test_a_user_with_replay_permission_replays_and_is_recorded(django_app: DjangoTestApp) -> None:
    _, occurrence = with_history()
    Occurrence.objects.filter(pk=occurrence.pk).update(state=OccurrenceState.FAILED)
    fixer = staff("fixer", "view_occurrence", "replay_occurrence")
    page = changelist_action(django_app, OCCURRENCES, fixer, "replay", occurrence)
    submit(form_on(page), "confirm", note="db back")
    occurrence.refresh_from_db()
    attempt = occurrence.attempt_history.get(kind="replay")
    assert (occurrence.state, attempt.by, attempt.note) == ("pending", "fixer", "db back")


def test_a_superuser_deletes_a_schedule_with_history_which_cancels_it(
    django_app: DjangoTestApp,
) -> None:
    schedule, _ = with_history()
    admin = User.objects.create_superuser("root", "root@example.com", "pw")
    url = reverse("admin:scheduler_app_schedule_delete", args=[schedule.pk])
    form = delete_form(django_app, url, admin)
    assert form.response.status_code == 200
    assert "cancelled instead of deleted" in form.response.text
    assert form.submit().status_code == 302
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.CANCELLED


def test_a_code_declared_schedule_cannot_be_deleted_or_cancelled(
    django_app: DjangoTestApp,
) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    Schedule.objects.filter(pk=schedule.pk).update(origin="code")
    root = User.objects.create_superuser("root", "r@example.com", "pw")
    url = reverse("admin:scheduler_app_schedule_delete", args=[schedule.pk])
    assert django_app.get(url, user=root, expect_errors=True).status_code == 403
    # FORGED: the delete page is refused, so no form; the "Yes" posted by hand.
    assert (
        forged_post(django_app, url, root, {"post": "yes"}, expect_errors=True).status_code == 403
    )
    change = reverse("admin:scheduler_app_schedule_change", args=[schedule.pk])
    assert 'data-action="cancel"' not in django_app.get(change, user=root).text
    # The change page offers no Cancel; the cancel page, opened by its address, is confirmed.
    refused = submit(confirm_form(django_app, action_url("cancel", schedule), root), "confirm")
    assert "declared in code" in refused.maybe_follow().text
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.ACTIVE
    assert django_app.get(action_url("pause", schedule), user=root).status_code == 200


# -- tenants -------------------------------------------------------------------------------


def test_the_default_resolver_reads_tenant_groups() -> None:
    acme = staff("a", tenants=("acme", "beta"))
    plain = staff("p")
    root = User.objects.create_superuser("root", "r@example.com", "pw")
    assert tenants_for_user(acme) == {"acme", "beta"}
    assert tenants_for_user(plain) == {""}
    assert tenants_for_user(root) is None


def test_the_resolver_is_swappable(settings: object) -> None:
    settings.SCHEDULER_TENANT_RESOLVER = "tests.integration.admin.test_permissions.only_zeta"  # type: ignore[attr-defined]
    assert allowed_tenants(staff("z")) == {"zeta"}


def only_zeta(user: object) -> set[str]:
    return {"zeta"}


@pytest.fixture
def two_tenants() -> tuple[Schedule, Schedule]:
    mine = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 8 * * *", tenant="acme", name="acme report"
    )
    theirs = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 9 * * *", tenant="globex", name="globex report"
    )
    return mine, theirs


ALL = ("view_schedule", "change_schedule", "delete_schedule", "pause_schedule", "run_schedule")


def test_staff_see_only_their_tenants_schedules(two_tenants: tuple[Schedule, Schedule]) -> None:
    mine, theirs = two_tenants
    browser = client_for(staff("acme_ops", *ALL, "view_occurrence", tenants=("acme",)))
    page = browser.get(CHANGELIST).content.decode()
    assert "acme report" in page and "globex report" not in page
    for name in ("change", "delete", "history"):
        url = reverse(f"admin:scheduler_app_schedule_{name}", args=[theirs.pk])
        assert browser.get(url).status_code == 404, name
    for name in ("pause", "run", "backfill", "cancel"):
        assert browser.get(action_url(name, theirs)).status_code == 404, name
    assert browser.get(action_url("pause", mine)).status_code == 200


@pytest.mark.usefixtures("two_tenants")
def test_occurrences_of_other_tenants_are_hidden() -> None:
    _, occurrence = with_history(tenant="globex", name="globex minutely")
    browser = client_for(staff("acme_ops", "view_occurrence", tenants=("acme",)))
    assert "globex minutely" not in browser.get(OCCURRENCES).content.decode()
    url = reverse("admin:scheduler_app_occurrence_change", args=[occurrence.pk])
    assert browser.get(url).status_code == 404


def test_the_preview_view_refuses_other_tenants_and_users_without_permission(
    two_tenants: tuple[Schedule, Schedule],
) -> None:
    mine, theirs = two_tenants
    url = reverse("admin:scheduler_app_schedule_preview")
    form = {"repeat": "daily", "at_times": "09:00", "timezone": "UTC"}
    acme = client_for(staff("acme_ops", *ALL, tenants=("acme",)))
    assert acme.post(url, {**form, "_object_id": str(theirs.pk)}).status_code == 404
    assert acme.post(url, {**form, "_object_id": str(mine.pk)}).json()["ok"] is True
    nobody = client_for(staff("nobody", tenants=("acme",)))
    assert nobody.post(url, {**form, "_object_id": str(mine.pk)}).status_code == 403
    assert nobody.post(url, form).status_code == 403


def test_the_form_offers_only_the_users_tenants(two_tenants: tuple[Schedule, Schedule]) -> None:
    browser = client_for(staff("acme_ops", *ALL, "add_schedule", tenants=("acme",)))
    page = browser.get(reverse("admin:scheduler_app_schedule_add")).content.decode()
    assert 'value="acme"' in page and "globex" not in page


def test_operator_services_check_tenant_and_permission(
    two_tenants: tuple[Schedule, Schedule],
) -> None:
    mine, theirs = two_tenants
    runner = staff("runner", "run_schedule", tenants=("acme",))
    with pytest.raises(TenantForbidden):
        services.run_now(theirs, user=runner)
    with pytest.raises(OperatorPermissionDenied):
        services.run_now(mine, user=staff("viewer", "view_schedule", tenants=("acme",)))
    assert services.run_now(mine, user=runner).requested_by == "runner"
    assert not Occurrence.objects.filter(schedule=theirs).exists()


def test_a_malformed_id_is_a_404_not_a_server_error() -> None:
    browser = client_for(User.objects.create_superuser("root", "r@example.com", "pw"))
    assert browser.get("/admin/scheduler_app/schedule/not-a-uuid/pause/").status_code == 404
    url = reverse("admin:scheduler_app_schedule_preview")
    assert browser.post(url, {"_object_id": "not-a-uuid"}).status_code == 404
