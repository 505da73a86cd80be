"""The soak's RSS table in docs/reliability.md (torture.report.rss_table)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from torture.ledger_figures import lateness_windows, percentiles
from torture.report import lateness_table, rss_table


def test_rss_every_ten_minutes_then_the_last_sample_and_the_max() -> None:
    samples = {"beat1": [80.0 + i / 10 for i in range(45)], "worker1": [90.0, 140.0, 95.0]}
    lines = rss_table(samples)
    assert lines[2] == "| process | 0 min | 10 min | 20 min | 22 min | max |"
    assert lines[3] == "|---|---|---|---|---|---|"
    assert lines[4] == "| beat1 | 80.0 | 82.0 | 84.0 | 84.4 | 84.4 |"
    # a process with fewer samples (restarted late, or the run ended): dashes, never an error
    assert lines[5] == "| worker1 | 90.0 | - | - | - | 140.0 |"


def test_lateness_by_ten_minute_window_of_slot_time() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    delays = [(start + timedelta(minutes=m, seconds=5), late) for m, late in
              [(0, 0.1), (3, 0.3), (9, 0.2), (10, 2.0), (25, 0.5)]]  # fmt: skip
    delays.append((start - timedelta(seconds=1), 0.4))  # a slot just before the start: first
    windows = lateness_windows(delays, start)
    assert [(w["from_min"], w["count"], w["max"]) for w in windows] == [
        (0, 4, 0.4),
        (10, 1, 2.0),
        (20, 1, 0.5),
    ]
    assert windows[0]["p50"] == 0.25
    assert lateness_table(windows)[4] == "| 0-10 min | 4 | 0.25 | 0.39 | 0.40 | 0.40 |"
    assert percentiles([]) == {}
