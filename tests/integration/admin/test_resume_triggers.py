"""The resume page names each slot as it is then recorded: a late slot the misfire policy runs
is a catch-up (``trigger=catch_up``), a slot still within ``max_lateness`` runs on time
(``trigger=scheduled``)."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone
from django_webtest import DjangoTestApp  # type: ignore[import-untyped]

from scheduler_app import services
from scheduler_app.models import Occurrence, Schedule, Trigger
from tests.integration.admin.support import confirm_form, submit

pytestmark = pytest.mark.django_db


def paused_three_hours_ago(**fields: Any) -> Schedule:
    """An hourly schedule whose next slot is three hours behind (it was paused meanwhile)."""
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 * * * *", **fields)
    services.pause_schedule(schedule.pk)
    top = timezone.now().replace(minute=0, second=0, microsecond=0)
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=top - timedelta(hours=3))
    schedule.refresh_from_db()
    return schedule


def test_the_resume_page_promises_what_is_recorded(django_app: DjangoTestApp) -> None:
    root = User.objects.create_superuser("root", "r@example.com", "pw")
    schedule = paused_three_hours_ago(max_lateness=3600)  # this hour's slot is not late yet
    url = reverse("admin:scheduler_app_schedule_resume", args=[schedule.pk])
    form = confirm_form(django_app, url, root)
    items = [li.get_text(" ", strip=True) for li in form.response.html.select("li")]
    shown = Counter(text.split(" at ")[0] for text in items if " at 20" in text)
    assert shown == {"Catch-up": 3, "On time": 1}, items
    headline = "Resuming creates 4 occurrence(s): 3 catch-up (misfire policy catch_up) and 1 on"
    assert headline in form.response.text

    submit(form, "confirm")
    recorded = Counter(
        Occurrence.objects.filter(schedule=schedule).values_list("trigger", flat=True)
    )
    assert recorded == {Trigger.CATCH_UP: 3, Trigger.SCHEDULED: 1}


def test_all_late_slots_are_named_catch_up(django_app: DjangoTestApp) -> None:
    root = User.objects.create_superuser("root", "r@example.com", "pw")
    schedule = paused_three_hours_ago(max_lateness=1)
    url = reverse("admin:scheduler_app_schedule_resume", args=[schedule.pk])
    form = confirm_form(django_app, url, root)
    assert "Resuming creates 4 catch-up occurrence(s)" in form.response.text
    submit(form, "confirm")
    triggers = set(Occurrence.objects.filter(schedule=schedule).values_list("trigger", flat=True))
    assert triggers == {Trigger.CATCH_UP}
