"""Users with chosen permissions and tenants, and schedules with history, for the admin tests."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import Group, Permission, User
from django.test import Client

from scheduler_app import services
from scheduler_app.clock import FakeClock
from scheduler_app.models import Occurrence, Schedule
from scheduler_app.ticker import Ticker
from tests.integration.support import MemoryPublisher


def staff(username: str, *codenames: str, tenants: tuple[str, ...] = ()) -> User:
    """An active staff user with exactly these scheduler_app permissions and tenant groups."""
    user = User.objects.create_user(username, f"{username}@example.com", "pw", is_staff=True)
    for codename in codenames:
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label="scheduler_app", codename=codename)
        )
    for tenant in tenants:
        group, _ = Group.objects.get_or_create(name=f"tenant:{tenant}")
        user.groups.add(group)
    return user


def client_for(user: User) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def with_history(**fields: object) -> tuple[Schedule, Occurrence]:
    """A schedule whose first slot has been materialized (it has one occurrence)."""
    values = {"task": "demo.ping", "kind": "interval", "rule": "60s", **fields}
    schedule = services.create_schedule(**values)
    assert schedule.next_run_at is not None
    clock = FakeClock(schedule.next_run_at + timedelta(seconds=1))
    Ticker(MemoryPublisher(), clock=clock).tick()
    schedule.refresh_from_db()
    return schedule, Occurrence.objects.filter(schedule=schedule).get()
