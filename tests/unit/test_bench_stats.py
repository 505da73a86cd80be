"""The scale benchmark's statistics and child processes: summaries, results read back from a
child's log, and output that never blocks a child (``bench.scale.env``, ``bench.scale.figures``)."""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench.report import percentile, summarize
from bench.scale import env
from bench.scale.beatburst import LEAD_S, lead_for, next_minute
from bench.scale.beatburst import summarize as summarize_beat
from bench.scale.figures import bursts_for, summarize_bursts, summarize_startup
from bench.scale.judge import duplicates
from bench.scale.realtime import errors_in
from bench.scale.worker import gap_figures, shape


def test_percentile_interpolates_and_summarize_rounds() -> None:
    samples = [4.0, 1.0, 3.0, 2.0]
    assert percentile(samples, 0.5) == 2.5
    assert percentile(samples, 0.0) == 1.0 and percentile(samples, 1.0) == 4.0
    assert summarize(samples, 1) == {
        "n": 4, "median": 2.5, "p10": 1.3, "p90": 3.7, "min": 1.0, "max": 4.0,
    }  # fmt: skip


def test_bursts_follow_the_size() -> None:
    assert bursts_for(100) == [100]
    assert bursts_for(10_000) == [1000, 10_000]
    assert bursts_for(1_000_000) == [1000, 10_000, 100_000]


def test_a_finished_burst_has_a_median_and_a_rate() -> None:
    runs = [{"finished": True, "seconds": s, "sent": 1000} for s in (0.5, 0.4, 0.6)]
    summary = summarize_bursts(1000, 60.0, runs)
    assert summary["finished"] is True
    assert summary["seconds"]["median"] == 0.5
    assert summary["per_second"] == 2000.0


def test_an_unfinished_burst_reports_what_was_sent_within_the_budget() -> None:
    runs = [{"finished": False, "seconds": 60.0, "sent": 300}]
    summary = summarize_bursts(1000, 60.0, runs)
    assert summary["finished"] is False
    assert summary["sent_within_budget"] == 300 and summary["per_second"] == 5.0
    assert "seconds" not in summary


def test_startup_samples_pool_idle_ticks_and_round_trips() -> None:
    run = {
        "startup_s": 0.1, "construct_s": 0.05, "first_tick_s": 0.05, "import_setup_s": 1.0,
        "rss_mib": 70.0, "peak_rss_mib": 71.0,
    }  # fmt: skip
    runs = [
        run | {"idle_tick_ms": [1.0, 3.0], "idle_tick_queries": [2, 2], "idle_tick_redis": [0, 1]},
        run | {"idle_tick_ms": [2.0], "idle_tick_queries": [2], "idle_tick_redis": [0]},
    ]
    summary = summarize_startup(runs)
    assert summary["idle_tick_ms"]["n"] == 3 and summary["idle_tick_ms"]["median"] == 2.0
    assert summary["idle_tick_queries"] == {"min": 2, "max": 2, "n": 3}
    assert summary["idle_tick_redis"] == {"min": 0, "max": 1, "n": 3}
    assert "ticker_idle_tick_ms" not in summary  # only ours has a bare Ticker


def test_last_json_takes_the_childs_last_result_line() -> None:
    text = 'ready\n{"a": 1}\nnoise {not json\n{"b": 2}\n\n'
    assert env.last_json(text) == {"b": 2}
    with pytest.raises(ValueError, match="no JSON result"):
        env.last_json("only\nlog lines\n")


def test_a_child_that_writes_more_than_a_pipe_holds_does_not_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bug of the first harness: a beat's stderr piped and never read blocked the beat
    once 64 KiB filled. Children now write to log files."""
    monkeypatch.setattr(env, "LOG_DIR", tmp_path)
    code = "import sys; sys.stderr.write('x' * 300_000); print('{\"done\": true}')"
    child = env.Child("noisy", [sys.executable, "-c", code])
    assert child.wait(timeout=30) == 0
    assert child.result() == {"done": True}
    assert child.err_path.stat().st_size == 300_000
    assert child.stderr_tail(10) == "x" * 10
    assert child.out_path.parent == tmp_path and child.err_path.name.endswith(".err.log")


def test_start_up_from_process_start_is_measured_from_the_spawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(env, "LOG_DIR", tmp_path)
    code = (
        "import json, time; time.sleep(0.2); print(json.dumps({'first_tick_done_at': time.time()}))"
    )
    begin = time.perf_counter()
    child = env.Child("startup", [sys.executable, "-c", code])
    assert child.wait(timeout=30) == 0
    result = env.child_result(child, begin)
    assert 0 < result["process_start_s"] <= result["process_s"]  # the interpreter's start


def test_stop_ends_a_child_that_runs_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(env, "LOG_DIR", tmp_path)
    child = env.Child("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"])
    assert child.stop(grace=10) != 0


def test_tail_of_a_missing_log_is_empty(tmp_path: Path) -> None:
    assert env.tail(tmp_path / "missing.log") == ""


def test_errors_in_keeps_warnings_errors_and_tracebacks() -> None:
    log = "\n".join(
        [
            "[x: INFO/MainProcess] tick: 1 published",
            "[x: WARNING/MainProcess] slow",
            "Traceback (most recent call last):",
            "[x: ERROR/MainProcess] boom",
        ]
    )
    assert errors_in(log) == [
        "[x: WARNING/MainProcess] slow",
        "Traceback (most recent call last):",
        "[x: ERROR/MainProcess] boom",
    ]
    assert errors_in(log, limit=1) == ["[x: ERROR/MainProcess] boom"]


def test_duplicates_count_messages_beyond_one_per_occurrence() -> None:
    sustained = {
        "runs": {
            "1": [{"queued": 100, "dispatched": 100}],
            "2": [{"queued": 103, "dispatched": 100}, {"queued": 99, "dispatched": 100}],
        }
    }
    assert duplicates(sustained) == 3
    sustained["runs"]["1"][0]["republished"] = 2  # published twice, one message consumed
    assert duplicates(sustained) == 5


def test_statements_are_grouped_by_verb_and_tables_without_values() -> None:
    select = 'SELECT "o"."id" FROM "scheduler_app_occurrence" INNER JOIN "s" ON x WHERE id = 3'
    assert shape(select) == "SELECT scheduler_app_occurrence, s"
    assert shape('UPDATE "scheduler_app_occurrence" SET a = 1 WHERE b = 2') == (
        "UPDATE scheduler_app_occurrence"
    )
    assert shape('INSERT INTO "t" ("a") VALUES (1)') == "INSERT t"
    assert shape('SAVEPOINT "s1"') == "SAVEPOINT"
    assert shape("  ") == "?"


def test_a_stall_shows_as_the_longest_pause_not_in_the_median() -> None:
    gaps = [0.010, 0.012, 10.0, 0.011, 0.013]
    figures = gap_figures(gaps)
    assert figures["median_gap_ms"] == pytest.approx(12.0)
    assert figures["max_gap_ms"] == pytest.approx(10_000.0)
    assert gap_figures([]) == {}


def test_the_real_beat_burst_waits_for_a_whole_minute() -> None:
    assert next_minute(datetime(2026, 7, 1, 12, 0, 0, tzinfo=UTC)) == datetime(
        2026, 7, 1, 12, 0, tzinfo=UTC
    )
    assert next_minute(datetime(2026, 7, 1, 12, 0, 0, 1, tzinfo=UTC)) == datetime(
        2026, 7, 1, 12, 1, tzinfo=UTC
    )


def test_the_lead_before_t_grows_with_what_a_beat_loads_before_its_first_tick() -> None:
    assert lead_for(0) == LEAD_S
    assert lead_for(10_000) == LEAD_S + 5
    assert lead_for(10_000, "dcb") == LEAD_S + 15  # it loads every row first


def test_a_real_beat_burst_keeps_its_first_message_time() -> None:
    done = summarize_beat(1000, 60.0, [{"finished": True, "seconds": 0.5, "first_s": 0.01,
                                        "sent": 1000}])  # fmt: skip
    assert done["seconds"]["median"] == 0.5 and done["first_s"]["median"] == 0.01
    assert done["per_second"] == 2000.0
    late = summarize_beat(1000, 60.0, [{"finished": False, "seconds": 60.0, "first_s": None,
                                        "sent": 120}])  # fmt: skip
    assert late["finished"] is False and late["sent_within_budget"] == 120
    assert "first_s" not in late  # nothing arrived
