"""A long-running beat settles its process once its start-up is done (``Ticker.settle``):
the start-up's garbage collected, what is left frozen out of the collector's full passes
(issue 39, "fast by default": ~9% of a burst of 1,000 slots)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from project.celery import app as celery_app
from scheduler_app.beat import DurableScheduler
from scheduler_app.clock import FakeClock
from scheduler_app.loop import SchedulerLoop
from scheduler_app.ticker import Ticker
from tests.integration.support import START, MemoryPublisher, ticker

pytestmark = pytest.mark.django_db(transaction=True)  # as a beat runs: no test transaction

REAL_SETTLE = Ticker.settle


@pytest.fixture
def settles(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """``Ticker.settle`` as it is (the test process's autouse fixture replaces it), counting
    the freezes; everything frozen is given back to the collector after the test."""
    frozen: list[int] = []
    real_freeze = gc.freeze

    def freeze() -> None:
        real_freeze()
        frozen.append(gc.get_freeze_count())

    monkeypatch.setattr(Ticker, "settle", REAL_SETTLE)
    monkeypatch.setattr(gc, "freeze", freeze)
    try:
        yield frozen
    finally:
        gc.unfreeze()


def test_the_beat_settles_its_process_once_after_its_first_tick(settles: list[int]) -> None:
    clock = FakeClock(START)
    beat = DurableScheduler(app=celery_app, ticker=ticker(MemoryPublisher(), clock), lazy=True)
    for _ in range(3):
        beat.tick()
        clock.advance(timedelta(seconds=5))
    assert len(settles) == 1 and settles[0] > 10_000  # Django, Celery, the app: all frozen


def test_run_scheduler_settles_its_process_once(settles: list[int]) -> None:
    clock = FakeClock(START)
    loop: Any = SchedulerLoop(clock=clock, ticker=ticker(MemoryPublisher(), clock))
    loop.wait = lambda seconds: False  # no wall-clock sleep between ticks
    loop.run(max_ticks=3)
    assert len(settles) == 1


def test_a_beat_whose_first_ticks_fail_settles_after_its_first_good_one(
    settles: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock(START)
    real = ticker(MemoryPublisher(), clock)
    beat = DurableScheduler(app=celery_app, ticker=real, lazy=True)
    good = real.tick
    monkeypatch.setattr(real, "tick", lambda: (_ for _ in ()).throw(KeyError("a bug")))
    beat.tick()
    assert settles == []
    monkeypatch.setattr(real, "tick", good)
    beat.tick()
    assert len(settles) == 1
