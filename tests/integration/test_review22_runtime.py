"""Review 22: the schedule's runtime table (multi-table inheritance) and the ORM paths around it."""

from __future__ import annotations

import pytest

from scheduler_app.models import Schedule, bulk_create_schedules
from tests.integration.support import START, TASK, reload

pytestmark = pytest.mark.django_db(transaction=True)


def test_schedules_made_by_bulk_create_schedules_can_be_saved_again() -> None:
    """As with ``bulk_create``, the instances are stored rows afterwards: saving one updates it
    (an instance still "adding" is inserted again, as its id has a default: a duplicate key)."""
    made = [
        Schedule(
            task=TASK,
            kind="cron",
            rule="0 * * * *",
            next_run_at=START,
            created_at=START,
            updated_at=START,
        )
        for _ in range(2)
    ]
    bulk_create_schedules(made)
    made[0].name = "renamed"
    made[0].occurrence_count = 4
    made[0].save()
    stored = reload(made[0])
    assert (stored.name, stored.occurrence_count) == ("renamed", 4)
