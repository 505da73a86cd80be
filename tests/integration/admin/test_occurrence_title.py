"""An occurrence is named by its schedule and its local slot with the zone, never by raw ISO
with microseconds: on its page's heading, title and breadcrumb, and on the replay page."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django_webtest import DjangoTestApp  # type: ignore[import-untyped]

from scheduler_app.admin.display import occurrence_title
from scheduler_app.models import Occurrence, OccurrenceState
from tests.integration.admin.support import changelist_action, with_history

pytestmark = pytest.mark.django_db

OCCURRENCES = reverse("admin:scheduler_app_occurrence_changelist")
SLOT = datetime(2026, 12, 6, 0, 0, 0, 123456, tzinfo=UTC)  # 02:00 in Riga


def nightly() -> Occurrence:
    _, occurrence = with_history(name="nightly report", timezone="Europe/Riga")
    Occurrence.objects.filter(pk=occurrence.pk).update(
        scheduled_for=SLOT, state=OccurrenceState.FAILED
    )
    return Occurrence.objects.select_related("schedule").get(pk=occurrence.pk)


def test_the_title_names_the_schedule_and_the_local_slot() -> None:
    assert occurrence_title(nightly()) == "nightly report — 2026-12-06 02:00 Europe/Riga"


def test_the_occurrence_page_heading_and_breadcrumb(django_app: DjangoTestApp) -> None:
    occurrence = nightly()
    root = User.objects.create_superuser("root", "r@example.com", "pw")
    url = reverse("admin:scheduler_app_occurrence_change", args=[occurrence.pk])
    page = django_app.get(url, user=root)
    wanted = "nightly report — 2026-12-06 02:00 Europe/Riga"
    assert page.html.select_one("#content h2").get_text(strip=True) == wanted
    assert wanted in page.html.select_one(".breadcrumbs").get_text(" ", strip=True)
    assert wanted in page.html.title.get_text()
    assert ".123456" not in page.text and "2026-12-06T00:00" not in page.text


def test_the_replay_page_names_the_occurrence_the_same_way(django_app: DjangoTestApp) -> None:
    occurrence = nightly()
    root = User.objects.create_superuser("root", "r@example.com", "pw")
    page = changelist_action(django_app, OCCURRENCES, root, "replay", occurrence)
    headings = [h.get_text(strip=True) for h in page.html.select("#content h2")]
    assert "nightly report — 2026-12-06 02:00 Europe/Riga" in headings
