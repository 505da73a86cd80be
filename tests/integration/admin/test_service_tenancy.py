"""The service layer applies the tenant hook too: a user acts only on their tenants' schedules."""

from __future__ import annotations

import pytest

from scheduler_app import services
from scheduler_app.models import Schedule, ScheduleStatus
from scheduler_app.safety.tenancy import TenantForbidden
from tests.integration.admin.support import staff

pytestmark = pytest.mark.django_db


def acme_schedule() -> object:
    return services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *", tenant="acme")


def test_a_user_cannot_create_a_schedule_in_another_tenant() -> None:
    globex = staff("gina", "add_schedule", "run_schedule", tenants=("globex",))
    with pytest.raises(TenantForbidden, match="not a member of tenant 'acme'"):
        services.create_schedule(
            task="demo.ping", kind="cron", rule="0 8 * * *", tenant="acme", user=globex
        )
    mine = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 8 * * *", tenant="globex", user=globex
    )
    assert mine.tenant == "globex"


def test_a_create_refused_for_its_tenant_reads_no_words_and_evaluates_no_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Who may create it is checked before the definition is parsed (docs/reference.md)."""

    def parsed(*args: object, **kwargs: object) -> None:
        raise AssertionError("the definition was parsed for a create that is refused")

    monkeypatch.setattr("scheduler_app.services.schedules.parse_definition", parsed)
    monkeypatch.setattr("scheduler_app.definition.text.parse_text", parsed)  # the words
    globex = staff("gina", "add_schedule", "run_schedule", tenants=("globex",))
    for timing in ({"text": "every weekday at 9:00"}, {"kind": "cron", "rule": "0 8 * * *"}):
        with pytest.raises(TenantForbidden):
            services.create_schedule(task="demo.ping", tenant="acme", user=globex, **timing)
    assert not Schedule.objects.exists()


def test_every_change_checks_the_users_tenants() -> None:
    schedule = acme_schedule()
    outsider = staff("olga", "change_schedule", "pause_schedule", tenants=("globex",))
    member = staff("amir", "change_schedule", "pause_schedule", tenants=("acme",))
    for change in (
        lambda user: services.pause_schedule(schedule.pk, user=user),
        lambda user: services.cancel_schedule(schedule.pk, user=user),
        lambda user: services.delete_schedule(schedule.pk, user=user),
        lambda user: services.update_schedule(
            schedule.pk, expected_version=1, user=user, name="renamed"
        ),
    ):
        with pytest.raises(TenantForbidden):
            change(outsider)
    schedule.refresh_from_db()
    assert (schedule.status, schedule.name) == (ScheduleStatus.ACTIVE, "")
    with pytest.raises(TenantForbidden, match="globex"):  # nor move it into a foreign tenant
        services.update_schedule(schedule.pk, expected_version=1, user=member, tenant="globex")
    services.pause_schedule(schedule.pk, user=member)
    services.resume_schedule(schedule.pk, user=member)
    assert (
        services.update_schedule(schedule.pk, expected_version=1, user=member, name="renamed").name
        == "renamed"
    )


def test_without_a_user_the_caller_is_trusted_code() -> None:
    schedule = acme_schedule()
    assert services.pause_schedule(schedule.pk).status == ScheduleStatus.PAUSED
