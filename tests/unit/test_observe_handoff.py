"""The hand-off's metrics: every first hand-off of a batch is counted once under its own
labels and its lateness observed once, whatever the batch mixes; a republish or a retry is
not a new emission."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from scheduler_app.models import OccurrenceState
from scheduler_app.observability import instruments

AT = datetime(2026, 12, 6, 9, 0, tzinfo=UTC)


def row(tenant: str, task: str, late: float, **changed: Any) -> Any:
    values: dict[str, Any] = {
        "emitted_at": None,
        "state": OccurrenceState.PENDING,
        "trigger": "scheduled",
        "task": task,
        "scheduled_for": AT - timedelta(seconds=late),
        "schedule": SimpleNamespace(tenant=tenant, lateness_class=""),
    }
    return SimpleNamespace(**(values | changed))


def emitted(tenant: str, task: str) -> float:
    value = instruments.EVENTS.get_sample_value(
        "scheduler_occurrences_emitted_total",
        {"trigger": "scheduled", "tenant": tenant, "task": task},
    )
    return value or 0.0


def lateness(suffix: str) -> float:
    value = instruments.EVENTS.get_sample_value(
        f"scheduler_dispatch_lateness_seconds_{suffix}",
        {"trigger": "scheduled", "lateness_class": "none"},
    )
    return value or 0.0


def test_each_first_hand_off_of_a_mixed_batch_is_counted_under_its_labels() -> None:
    before = {
        ("acme", "t.a"): emitted("acme", "t.a"),
        ("acme", "t.b"): emitted("acme", "t.b"),
        ("zen", "t.a"): emitted("zen", "t.a"),
    }
    count, total = lateness("count"), lateness("sum")
    batch = [
        row("acme", "t.a", 1.0),
        row("zen", "t.a", 2.0),
        row("acme", "t.a", 3.0),
        row("acme", "t.b", 4.0),
        row("acme", "t.a", 50.0, emitted_at=AT),  # a republish
        row("acme", "t.a", 60.0, state=OccurrenceState.RETRYING),  # a retry's publish
        row("zen", "t.a", -5.0),  # published before its slot: lateness 0
    ]
    instruments.observe_handoff(batch, AT)
    assert emitted("acme", "t.a") - before["acme", "t.a"] == 2
    assert emitted("acme", "t.b") - before["acme", "t.b"] == 1
    assert emitted("zen", "t.a") - before["zen", "t.a"] == 2
    assert lateness("count") - count == 5
    assert lateness("sum") - total == 1.0 + 2.0 + 3.0 + 4.0 + 0.0
