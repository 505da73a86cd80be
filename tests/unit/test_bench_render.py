"""The scale benchmark's report: rendered from the JSON results only, the three schedulers side
by side, loaded machines flagged, issue 16's targets judged (``bench.scale.render``,
``bench.scale.judge``, ``bench.scale.__main__``)."""

from __future__ import annotations

import argparse
import copy
import os
from pathlib import Path
from typing import Any

import pytest

from bench import report
from bench.scale.__main__ import choose, merge, parse_args
from bench.scale.env import report_names, use_broker
from bench.scale.judge import judge
from bench.scale.render import render, stat


def spread(median: float, low: float | None = None, high: float | None = None) -> dict[str, Any]:
    return {
        "n": 3, "median": median, "p10": median, "p90": median,
        "min": median if low is None else low, "max": median if high is None else high,
    }  # fmt: skip


def startup(seconds: float, tick_ms: float, queries: int, redis: int) -> dict[str, Any]:
    return {
        "finished": True,
        "startup_s": spread(seconds),
        **({"process_start_s": spread(0.9)} if queries else {}),
        "rss_mib": spread(75.0),
        "idle_tick_ms": spread(tick_ms, tick_ms / 2, tick_ms * 2),
        **({"ticker_idle_tick_ms": spread(tick_ms / 2)} if queries else {}),
        "idle_tick_queries": {"min": queries, "max": queries, "n": 60},
        "idle_tick_redis": {"min": redis, "max": redis, "n": 60},
    }


def burst(burst_size: int, seconds: float | None, budget: float = 60.0) -> dict[str, Any]:
    if seconds is None:
        runs = [{"finished": False, "seconds": budget, "sent": 400}]
        return {
            "burst": burst_size, "budget_s": budget, "runs": runs, "finished": False,
            "sent_within_budget": 400, "per_second": 400 / budget,
        }  # fmt: skip
    return {
        "burst": burst_size, "budget_s": budget, "finished": True,
        "runs": [{"finished": True, "seconds": seconds, "sent": burst_size}],
        "seconds": spread(seconds), "per_second": burst_size / seconds,
    }  # fmt: skip


def payload(load_before: float = 0.1, load_after: float = 1.2) -> dict[str, Any]:
    size = {
        "size": 10_000,
        "create": {"seconds": 2.0},
        "ours": {
            "startup": startup(0.15, 1.5, 2, 0),
            "bursts": {"1000": burst(1000, 0.08)},
            "soak": {
                "finished": True,
                "due": 720,
                "rss_start_mib": spread(72.0),
                "rss_end_mib": spread(74.0),
                "rss_max_mib": spread(74.0),
            },
        },
        "redbeat": {
            "startup": startup(0.05, 2.0, 0, 2),
            "bursts": {"1000": burst(1000, 2.5)},
            "soak": {"finished": False, "note": "real clock only"},
        },
        "dcb": {
            "startup": {"finished": False, "budget_s": 60.0},
            "bursts": {"1000": burst(1000, None)},
        },
    }
    return {
        "harness": 2,
        "timestamp": "2026-11-30T04:09:00+00:00",
        "command": "make bench",
        "machine": {
            "cpus": "2",
            "cpu_model": "CPU",
            "memory": "8Gi",
            "python": "3.11.7",
            "implementation": "CPython",
            "platform": "Linux",
            "commit": "abcdef1234567890",
            "dirty": False,
            "load_before": load_before,
            "load_after": load_after,
        },
        "settings": {
            "sizes": [10_000],
            "database": "bench",
            "redis_db": "11",
            "repeats": 3,
            "idle_ticks": 20,
            "dcb_budget": 60.0,
            "rb_budget": 120.0,
            "budget": 120.0,
            "batch_size": 500,
            "rb_repeats": 3,
            "dcb_repeats": 1,
            "raw_repeats": 3,
        },
        "wall_s": {"raw": 20.0, "size 10,000": 300.0},
        "load": {"raw": 0.1, "size 10,000": 0.4},
        "raw_limits": {
            "apply_async": {"label": "plain `apply_async` loop", "per_second": spread(800.0)},
            "pipeline": {"label": "Redis pipeline of LPUSHes", "per_second": spread(50_000.0)},
        },
        "sizes": [size],
        "lateness": None,
        "sustained": None,
        "worker": {
            "tasks": 1000,
            "runs": {"occurrence": [{}], "plain": [{}]},
            "occurrence": {
                "per_second": spread(300.0),
                "ms_per_task": spread(3.3),
                "queries_per_task": spread(5.0),
            },
            "plain": {
                "per_second": spread(600.0),
                "ms_per_task": spread(1.6),
                "queries_per_task": spread(2.0),
            },
            "overhead_ms": 1.7,
            "overhead_queries": 3.0,
            "statements": {
                "occurrence": {"UPDATE scheduler_app_occurrence": 2.0, "SELECT x": 1.0},
                "plain": {"SELECT x": 1.0},
            },
        },
    }


def rendered(data: dict[str, Any]) -> str:
    data["targets"] = judge(data)
    return render(data)


def table_row(text: str, first_cell: str) -> list[str]:
    for line in text.splitlines():
        if line.startswith(f"| {first_cell} |"):
            return [cell.strip() for cell in line.strip("|").split("|")]
    raise AssertionError(f"no row {first_cell!r} in:\n{text}")


def test_each_figure_has_the_three_schedulers_side_by_side() -> None:
    text = rendered(payload())
    header = "| schedules | this project | celery-redbeat 2.4.2 | django-celery-beat 2.9.0 |"
    assert text.count(header) == 6  # start-up (2), RSS, idle tick, round trips, soak
    whole = text.split("### Start-up from process start")[1]
    assert table_row(whole, "10,000")[1:3] == ["0.900", "-"]
    assert "| burst | this project | celery-redbeat 2.4.2 | django-celery-beat 2.9.0 |" in text
    assert table_row(text, "1,000 due, 10,000 stored") == [
        "1,000 due, 10,000 stored",
        "0.080 (12,500/s)",
        "2.500 (400/s)",
        "did not finish within 60 s (400 of 1,000 sent, 7/s)",
    ]
    idle = text.split("### Round trips per idle tick")[1]
    assert table_row(idle, "10,000") == ["10,000", "2 / 0", "0 / 2", "did not finish in 60 s"]
    assert text.count("What limits it:") >= 7
    assert "(`Ticker.tick()` alone): 0.75 ms at 10,000." in text


def test_the_worker_figure_compares_both_tasks_statement_by_statement() -> None:
    text = rendered(payload())
    assert table_row(text, "executed per second") == ["executed per second", "300", "600"]
    assert table_row(text, "overhead of `OccurrenceTask`: ms / queries per task")[1] == (
        "+1.700 ms / +3.00"
    )
    assert table_row(text, "longest pause between two tasks, ms")[1:] == ["-", "-"]
    assert table_row(text, "`UPDATE scheduler_app_occurrence`")[1:] == ["2", "0"]
    assert table_row(text, "`SELECT x`")[1:] == ["1", "1"]


def test_the_real_beat_burst_is_a_figure_of_its_own_and_judged() -> None:
    data = payload()
    entry = data["sizes"][0]
    entry["ours"]["beat"] = burst(1000, 0.9) | {"first_s": spread(0.05)}
    entry["redbeat"]["beat"] = burst(1000, 3.0) | {"first_s": spread(0.02)}
    entry["dcb"]["beat"] = burst(1000, None)
    text = rendered(data)
    section = text.split("### Burst from a real `celery beat`: 1,000 (at most the size)")[1]
    assert table_row(section, "10,000") == [
        "10,000",
        "0.900 (1,111/s) (first 0.050)",
        "3.000 (333/s) (first 0.020)",
        "did not finish within 60 s (400 of 1,000 sent, 7/s)",
    ]
    verdicts = {v["target"]: v for v in data["targets"]}
    assert verdicts["burst of 1,000 from a real beat <= 0.1 s (10,000 stored)"]["met"] is False
    ratio = verdicts["real beats: burst of 1,000 >= 20x faster than celery-redbeat (10,000 stored)"]
    assert ratio["met"] is False and ratio["measured"].startswith("3.3x")


def test_the_run_is_described_with_commit_load_and_raw_limits() -> None:
    text = rendered(payload())
    assert "`make bench` on 2026-11-30 04:09 UTC, commit abcdef123456" in text
    assert "1-minute load average 0.1 before, 1.2 after the run" in text
    assert "raw 20 s (load 0.1), size 10,000 300 s (load 0.4)" in text
    assert "| Redis pipeline of LPUSHes | 50,000 |" in text
    assert "1,000 messages take 0.020 s through Redis pipelines and 1.250 s" in text
    assert "Measured on a loaded machine" not in text


def test_results_of_the_first_harness_are_flagged_for_a_rerun() -> None:
    assert "From the first harness" not in rendered(payload())
    old = payload()
    del old["harness"]
    del old["sizes"][0]["ours"]["startup"]["idle_tick_redis"]  # not counted back then
    text = rendered(old)
    assert "**From the first harness**" in text and "rerun `make bench`" in text
    idle = text.split("### Round trips per idle tick")[1]
    assert table_row(idle, "10,000")[1] == "2 / -"


def test_figures_from_a_loaded_machine_are_marked() -> None:
    text = rendered(payload(load_before=2.5, load_after=3.0))
    assert "**Measured on a loaded machine** (1-minute load average 2.5 before, 3.0 after" in text


def test_targets_are_judged_against_the_same_run() -> None:
    verdicts = {v["target"]: v for v in judge(payload())}
    assert verdicts["burst of 1,000 <= 0.1 s (10,000 stored)"]["met"] is True
    ratio = verdicts["burst of 1,000 >= 20x faster than celery-redbeat (10,000 stored)"]
    assert ratio["met"] is True and ratio["measured"].startswith("31.2x")
    assert verdicts["idle tick <= celery-redbeat's in the same run"]["met"] is True
    assert verdicts["idle tick <= 2 queries, flat"]["met"] is True
    assert verdicts["start-up <= 0.2 s, flat in N"]["met"] is True
    worker = verdicts["`OccurrenceTask` overhead <= 2 ms and <= 3 queries per occurrence"]
    assert worker["met"] is False  # 5 queries per occurrence
    assert verdicts["one beat >= 10,000 occurrences/s"]["met"] is None  # not measured


def test_lateness_at_a_lower_rate_than_the_target_is_not_judged() -> None:
    data = payload()
    data["lateness"] = {
        "rate_per_minute": 600, "duration_s": 20.0, "p99_s": spread(0.2),
        "runs": [{"dispatched": 200, "expected": 200}],
    }  # fmt: skip
    verdict = next(v for v in judge(data) if v["target"].startswith("p99 dispatch lateness"))
    assert verdict["met"] is None and "a lower rate than the target's" in verdict["measured"]
    data["lateness"]["rate_per_minute"] = 60_000
    verdict = next(v for v in judge(data) if v["target"].startswith("p99 dispatch lateness"))
    assert verdict["met"] is True


def test_parts_skipped_at_the_time_limit_and_parts_not_run_are_named() -> None:
    data = payload()
    data["skipped"] = ["sustained"]
    text = rendered(data)
    assert "Skipped, the run being past its time limit (`--max-minutes`): sustained." in text
    assert "Not measured in this run: `profile`, `beat`, `lateness`, `sustained`." in text


def test_sustained_from_real_beats_says_so() -> None:
    data = payload()
    run = {"dispatched": 10_000, "queued": 10_000, "republished": 0, "per_second": 500.0}
    data["sustained"] = {
        "backlog": 10_000, "cap_s": 180.0, "real_beats": True, "finished": True,
        "one": spread(500.0), "two": spread(700.0), "ratio": spread(1.4),
        "runs": {"1": [run], "2": [run | {"per_second": 700.0}]},
    }  # fmt: skip
    text = rendered(data)
    assert "one, then two real `celery beat -S scheduler_app.beat:DurableScheduler`" in text
    assert table_row(text, "two beats / one beat")[1] == "1.40x"
    assert table_row(text, "messages beyond one per occurrence (duplicates), all runs")[1] == "0"
    verdict = next(v for v in data["targets"] if v["target"].startswith("two beats"))
    assert verdict["met"] is False and "0 duplicate messages" in verdict["measured"]


def test_stat_shows_median_and_spread_or_a_dash() -> None:
    assert stat({"x": spread(1.0, 0.5, 2.0)}, "x", fmt="{:.1f}") == "1.0 (0.5-2.0)"
    assert stat({"x": spread(1.0)}, "x", fmt="{:.1f}") == "1.0"
    assert stat({"finished": False, "x": spread(1.0)}, "x") == "-"
    assert stat(None, "x") == "-"


def test_a_split_run_keeps_the_other_parts_and_says_where_they_came_from() -> None:
    old = payload()
    old["command"], old["timestamp"] = "old run", "2026-11-30T00:00:00+00:00"
    new = copy.deepcopy(old)
    new["worker"] = None
    del new["sizes"][0]["redbeat"]["bursts"]
    merge(new, old)
    assert new["worker"] == old["worker"]
    assert new["sizes"][0]["redbeat"]["bursts"] == old["sizes"][0]["redbeat"]["bursts"]
    assert new["merged"] == {
        "worker": "`old run` (2026-11-30T00:00:00+00:00)",
        "bursts at 10,000 (redbeat)": "`old run` (2026-11-30T00:00:00+00:00)",
    }
    assert "Split run: these figures come from earlier runs" in rendered(new)
    del old["harness"]
    merge(newer := copy.deepcopy(new) | {"worker": None, "merged": {}}, old)
    assert newer["merged"]["worker"].endswith(", the first harness: rerun it")


def test_the_section_is_replaced_and_the_rest_of_the_page_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = tmp_path / "performance.md"
    page.write_text("# Performance\n\n## Scale (`make bench`)\n\nold\n\n## By hand\n\nkept\n")
    monkeypatch.setattr(report, "PERFORMANCE_MD", page)
    report.write_section("Scale (`make bench`)", "new body", {})
    assert page.read_text() == (
        "# Performance\n\n## Scale (`make bench`)\n\nnew body\n\n## By hand\n\nkept\n"
    )


def test_a_section_replaced_by_another_run_is_filed_on_the_history_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page, history = tmp_path / "performance.md", tmp_path / "performance-history.md"
    old = "Run: `make bench` on 2026-12-01 10:00 UTC.\n\n### Burst\n\n0.4 s"
    page.write_text(f"# Performance\n\n## Scale (`make bench`)\n\n{old}\n")
    history.write_text("# History\n\n## Replaced sections of the performance page\n\nIntro.\n")
    monkeypatch.setattr(report, "PERFORMANCE_MD", page)
    report.write_section("Scale (`make bench`)", old, {})  # the same run again: nothing filed
    assert "0.4 s" not in history.read_text()
    report.write_section("Scale (`make bench`)", "Run: `make bench` on 2026-12-09.\n\n1 s", {})
    assert "0.4 s" not in page.read_text()
    filed = history.read_text().split("Intro.\n", 1)[1]
    assert filed.startswith("\n### Scale (`make bench`), replaced on ")
    assert "2026-12-01 10:00 UTC" in filed and "#### Burst\n\n0.4 s" in filed


def args(*argv: str) -> argparse.Namespace:
    return parse_args(list(argv))


def test_make_bench_defaults_run_every_part_and_scheduler() -> None:
    sizes, parts, schedulers = choose(args())
    assert sizes == [1000, 10_000]
    assert parts == [
        "raw", "startup", "burst", "soak", "profile", "beat", "lateness", "sustained", "worker",
    ]  # fmt: skip
    assert schedulers == ["ours", "redbeat", "dcb"]


def test_on_rabbitmq_the_issues_figures_run_and_get_their_own_file_and_section() -> None:
    _, parts, _ = choose(args("--broker", "amqp"))
    assert parts == ["raw", "burst", "beat", "sustained", "worker"]
    assert report_names("amqp") == (
        "scale-amqp",
        'Scale on RabbitMQ (`make bench BENCH_ARGS="--broker amqp"`)',
    )
    assert report_names("redis") == ("scale", "Scale (`make bench`)")
    data = payload()
    data["settings"]["broker"], data["benchmark"] = "amqp", "scale-amqp"
    text = rendered(data)
    assert "**On RabbitMQ**, with publisher confirms" in text
    assert "publishes real Celery messages to RabbitMQ (queue `bench`" in text
    assert "Raw numbers: `bench/results/scale-amqp.json`" in text
    assert "waits once for RabbitMQ's confirms of the whole batch" in text
    assert "through Redis pipelines" not in text  # no Redis-only claims on RabbitMQ


def test_use_broker_keeps_the_redis_url_for_the_bench(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:6379/11")
    monkeypatch.delenv("BENCH_REDIS_URL", raising=False)
    use_broker("amqp", "amqp://guest:guest@127.0.0.1:5672//")
    assert os.environ["CELERY_BROKER_URL"] == "amqp://guest:guest@127.0.0.1:5672//"
    assert os.environ["BENCH_REDIS_URL"] == "redis://127.0.0.1:6379/11"
    with pytest.raises(SystemExit, match="use redis or amqp"):
        use_broker("kafka")


def test_choosing_parts_and_schedulers() -> None:
    sizes, parts, schedulers = choose(args("--only", "sustained", "--schedulers", "dcb,ours"))
    assert sizes == []  # no per-size part: no schedules to create per size
    assert parts == ["raw", "sustained"]  # sustained is compared with the raw rate
    assert schedulers == ["ours", "dcb"]
    with pytest.raises(SystemExit, match="unknown part"):
        choose(args("--only", "bursts"))
    with pytest.raises(SystemExit, match="unknown redbeet"):
        choose(args("--schedulers", "redbeet"))
