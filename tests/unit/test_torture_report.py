"""The soak's RSS table in docs/reliability.md (torture.report.rss_table)."""

from __future__ import annotations

from torture.report import rss_table


def test_rss_every_ten_minutes_then_the_last_sample_and_the_max() -> None:
    samples = {"beat1": [80.0 + i / 10 for i in range(45)], "worker1": [90.0, 140.0, 95.0]}
    lines = rss_table(samples)
    assert lines[2] == "| process | 0 min | 10 min | 20 min | 22 min | max |"
    assert lines[3] == "|---|---|---|---|---|---|"
    assert lines[4] == "| beat1 | 80.0 | 82.0 | 84.0 | 84.4 | 84.4 |"
    # a process with fewer samples (restarted late, or the run ended): dashes, never an error
    assert lines[5] == "| worker1 | 90.0 | - | - | - | 140.0 |"
