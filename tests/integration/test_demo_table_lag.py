"""The demo's live table measures lateness as the admin does: the dispatch lag (first handoff
minus the slot, never below zero), named and written the same way."""

from __future__ import annotations

from datetime import timedelta

import pytest

from project.demo.table import HEADER, render
from scheduler_app.models import Occurrence
from scheduler_app.monitoring.lateness import Lag, seconds_text
from tests.integration.admin.support import with_history

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def demo_tasks_allowed(settings: object) -> None:
    settings.SCHEDULER_ALLOWED_TASKS = ("demo.*",)  # type: ignore[attr-defined]


def test_the_table_shows_the_first_handoffs_dispatch_lag() -> None:
    _, occurrence = with_history()
    slot = occurrence.scheduled_for
    # Handed off 0.4 s late, then handed off again by a retry 30 s later.
    Occurrence.objects.filter(pk=occurrence.pk).update(
        emitted_at=slot + timedelta(seconds=0.4), dispatched_at=slot + timedelta(seconds=30)
    )
    assert Lag.DISPATCH.value in HEADER and "lateness" not in HEADER
    line = render().splitlines()[-1]
    assert seconds_text(0.4) in line and "30.0" not in line


def test_a_handoff_ahead_of_the_slot_is_on_time() -> None:
    _, occurrence = with_history()
    early = occurrence.scheduled_for - timedelta(seconds=5)
    Occurrence.objects.filter(pk=occurrence.pk).update(emitted_at=early, dispatched_at=early)
    assert seconds_text(0.0) in render().splitlines()[-1]
