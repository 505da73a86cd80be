"""One batch's schedules that share a rule, a zone and a due slot share one due walk
(issue 39: planning is Python per slot; a burst is mostly schedules due at one instant with
the same few rules). The shared walk gives each schedule the answer its own walk gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from scheduler_app.dispatch import due
from scheduler_app.timing import build_timing

NOW = datetime(2026, 3, 30, 6, 30, 5, tzinfo=UTC)


def schedule(next_run_at: datetime, catch_up: int = 0) -> Any:
    return SimpleNamespace(next_run_at=next_run_at, catch_up_window=catch_up, max_lateness=0)


@pytest.fixture
def walked(monkeypatch: pytest.MonkeyPatch) -> list[datetime]:
    starts: list[datetime] = []
    real = due._walk

    def counted(timing: Any, start: datetime, *args: Any) -> due.Due:
        starts.append(start)
        return real(timing, start, *args)

    monkeypatch.setattr(due, "_walk", counted)
    return starts


def test_schedules_due_alike_share_one_walk_and_get_its_answer(walked: list[datetime]) -> None:
    riga = build_timing(kind="cron", rule="30 9 * * 1-5", timezone="Europe/Riga")
    also_riga = build_timing(kind="cron", rule="30 9 * * 1-5", timezone="Europe/Riga")
    tokyo = build_timing(kind="cron", rule="30 9 * * 1-5", timezone="Asia/Tokyo")
    slot = datetime(2026, 3, 30, 6, 30, tzinfo=UTC)  # 09:30 in Riga (summer time)
    walks: due.Walks = {}
    first = due.due_walk(schedule(slot), riga, NOW, 100, walks)
    second = due.due_walk(schedule(slot), also_riga, NOW, 100, walks)
    other = due.due_walk(schedule(NOW - timedelta(days=1)), tokyo, NOW, 100, walks)
    assert len(walked) == 2  # Riga's once, Tokyo's once
    alone = due.due_walk(schedule(slot), riga, NOW, 100)
    assert first == second == alone
    assert first.slots == [slot] and first.following == slot + timedelta(days=1)
    assert first.slots is not second.slots  # each schedule gets its own list
    assert other == due.due_walk(schedule(NOW - timedelta(days=1)), tokyo, NOW, 100)


def test_a_long_walk_is_not_kept(walked: list[datetime]) -> None:
    every_minute = build_timing(kind="cron", rule="* * * * *", timezone="UTC")
    behind = schedule(NOW - timedelta(hours=3), catch_up=86_400)  # 180 late slots, caught up
    walks: due.Walks = {}
    for _ in range(2):
        found = due.due_walk(behind, every_minute, NOW, 10_000, walks)
        assert len(found.slots) == 180
    assert len(walked) == 2 and walks == {}
