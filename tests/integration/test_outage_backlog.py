"""After a beat outage: no on-time slot is dropped as overlap when no run overran, and the
backlog drains as fast as its runs end (not one run per beat tick).

The real ``Ticker`` on a fake clock, with a worker whose runs take a fixed time
(``outage_support``). "Nothing overran" means every run is shorter than the interval; a row
waiting in the backlog has not started, so it has not overrun either.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import transaction
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from pytest_django.fixtures import Settings as SettingsWrapper

from scheduler_app.models import Occurrence, OccurrenceState, Trigger
from scheduler_app.ticker import DRAIN_POLL
from tests.integration.outage_support import Outage, simulate

pytestmark = pytest.mark.django_db
POLL = timedelta(seconds=DRAIN_POLL)
SLACK = timedelta(milliseconds=5)
KEEPS_EVERY_SLOT = ("skip", "buffer_all", "allow")
"""The policies that drop a slot only for a run that overran (``buffer_one`` keeps one place,
``cancel_previous`` lets the newest slot win: both drop waiting rows by design)."""


def dropped_for_overlap(outage: Outage) -> list[Occurrence]:
    return [row for row in outage.rows() if row.reason == "overlap"]


def assert_drained_as_fast_as_runs_end(outage: Outage, run: float, overlap: str) -> None:
    """Each run of the backlog starts within ``DRAIN_POLL`` of the previous one's end."""
    backlog = outage.backlog()
    drained = outage.drained_at()
    assert drained is not None, "the backlog did not drain"
    runs = 1 if overlap == "allow" else len(backlog)  # allow: all at once
    bound = runs * (timedelta(seconds=run) + POLL) + POLL + SLACK
    assert drained - outage.restarted_at <= bound, (len(backlog), drained - outage.restarted_at)


def test_every_10s_after_an_85s_outage_no_on_time_run_is_dropped() -> None:
    """The finding of issue 35: default policies, 40 ms runs. Before the fix three on-time
    slots ended ``skipped: overlap`` and the 8-slot backlog took 34.5 s (one per 5 s tick)."""
    outage = simulate(interval=10, outage=85, run=0.04, overlap="skip")
    assert dropped_for_overlap(outage) == []
    backlog = outage.backlog()
    assert [row.trigger for row in backlog] == [Trigger.CATCH_UP] * 2 + [Trigger.SCHEDULED] * 6
    assert all(row.state == OccurrenceState.SUCCEEDED for row in backlog)
    drained = outage.drained_at()
    assert drained is not None and drained - outage.restarted_at <= timedelta(seconds=2)
    # Then on time again: every later slot started at its slot.
    later = [row for row in outage.rows() if row.scheduled_for > outage.restarted_at]
    assert later and all(row.started_at == row.scheduled_for for row in later)


def test_a_backlog_of_slow_runs_takes_on_time_slots_behind_it(settings: SettingsWrapper) -> None:
    """1.8 s runs every 2 s: the backlog runs back to back; the on-time slots that arrive
    meanwhile wait behind it (in slot order) instead of being skipped."""
    settings.SCHEDULER_MIN_INTERVAL = 1
    outage = simulate(interval=2, outage=17, run=1.8, overlap="skip", after=20)
    assert dropped_for_overlap(outage) == []
    assert_drained_as_fast_as_runs_end(outage, 1.8, "skip")
    starts = [row.started_at for row in outage.rows() if row.started_at is not None]
    assert starts == sorted(starts)


def test_skip_still_skips_once_a_run_overran(settings: SettingsWrapper) -> None:
    """2.4 s runs every 2 s overran before the outage: new slots are skipped while the backlog
    drains (it does not grow), and nothing waits once it has drained."""
    settings.SCHEDULER_MIN_INTERVAL = 1
    outage = simulate(interval=2, outage=17, run=2.4, overlap="skip", after=26)
    assert dropped_for_overlap(outage)
    assert_drained_as_fast_as_runs_end(outage, 2.4, "skip")
    waiting = Occurrence.objects.filter(schedule=outage.target, state=OccurrenceState.BUFFERED)
    assert not waiting.exists()


@contextmanager
def rolled_back() -> Iterator[None]:
    """One hypothesis example: the test's database transaction is shared, so undo each one."""
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


@hypothesis_settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    interval=st.integers(min_value=2, max_value=30),
    outage_slots=st.floats(min_value=0.5, max_value=8),
    overlap=st.sampled_from(["skip", "buffer_all", "allow", "buffer_one", "cancel_previous"]),
    misfire=st.sampled_from(["catch_up", "fire_once", "skip"]),
    run_share=st.one_of(
        st.floats(min_value=0.001, max_value=0.2),  # short runs: the common case
        st.floats(min_value=0.2, max_value=0.95),
        st.floats(min_value=1.05, max_value=1.5),  # runs that overran
    ),
)
@example(  # found this session: a slot caught up as ``scheduled`` (4.9 s late) ran into the
    # next slot, which ``skip`` dropped; a row made late is a backlog's row now (``LATE_ROW``)
    interval=5,
    outage_slots=1.875,
    overlap="skip",
    misfire="catch_up",
    run_share=0.125,
)
def test_after_any_outage_nothing_is_dropped_unless_a_run_overran(
    settings: SettingsWrapper,
    interval: int,
    outage_slots: float,
    overlap: str,
    misfire: str,
    run_share: float,
) -> None:
    settings.SCHEDULER_MIN_INTERVAL = 1  # short intervals: runs that overrun stay short too
    run = round(min(interval * run_share, 2.0), 3)  # seconds at most: the test stays fast
    overran = run >= interval
    slots = outage_slots + 2  # the backlog, at most
    with rolled_back():
        outage = simulate(
            interval=interval,
            outage=round(interval * outage_slots, 3),
            run=run,
            overlap=overlap,
            misfire=misfire,
            slots_before=2,
            after=slots * (run + DRAIN_POLL) + 2 * interval,
        )
        if not overran and overlap in KEEPS_EVERY_SLOT:
            assert dropped_for_overlap(outage) == []
        if overlap != "cancel_previous":  # its newest slot supersedes what waits
            assert_drained_as_fast_as_runs_end(outage, run, overlap)
        waiting = Occurrence.objects.filter(schedule=outage.target, state=OccurrenceState.BUFFERED)
        if overran and overlap == "skip":  # skip applies again: nothing joins the backlog
            assert not waiting.exists()
        if overlap == "buffer_one":
            assert waiting.count() <= 1
