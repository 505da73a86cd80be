"""System check E008: the search budget's settings are whole numbers >= 1 (a bad one would make
every schedule's rule fail to build: every create refused, every planned schedule parked)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.checks import run_checks
from django.test import override_settings

from scheduler_app.checks.search import search_budget_errors
from scheduler_app.checks.startup import TAG

BAD = [0, -1, 1.5, "10", True, None, timedelta(days=3)]


def test_the_defaults_and_any_whole_number_from_one_pass() -> None:
    assert search_budget_errors(100_000, 3653) == []
    assert search_budget_errors(1, 1) == []
    assert search_budget_errors(10**9, timedelta.max.days) == []


@pytest.mark.parametrize("value", BAD)
def test_each_setting_that_is_not_a_whole_number_from_one_is_an_error(value: object) -> None:
    [candidates] = search_budget_errors(value, 3653)
    assert candidates.id == "scheduler_app.E008"
    assert candidates.msg.startswith(f"SCHEDULER_SEARCH_CANDIDATES is {value!r}, not a whole")
    assert "(the default: 100000)" in str(candidates.hint)
    [span] = search_budget_errors(100_000, value)
    assert span.id == "scheduler_app.E008"
    assert span.msg.startswith(f"SCHEDULER_SEARCH_SPAN_DAYS is {value!r}, not a whole number")


def test_a_span_too_long_for_a_timedelta_is_an_error() -> None:
    [span] = search_budget_errors(100_000, timedelta.max.days + 1)
    assert "and <= 999,999,999" in span.msg


@override_settings(SCHEDULER_SEARCH_CANDIDATES=0, SCHEDULER_SEARCH_SPAN_DAYS="ten years")
@pytest.mark.django_db  # Django 6 runs the model checks against a connection
def test_the_check_reads_the_settings_and_runs_when_a_beat_or_worker_starts() -> None:
    found = [m for m in run_checks(tags=[TAG]) if m.id == "scheduler_app.E008"]
    assert [m.msg.split(" is ")[0] for m in found] == [
        "SCHEDULER_SEARCH_CANDIDATES",
        "SCHEDULER_SEARCH_SPAN_DAYS",
    ]


@pytest.mark.django_db  # Django 6 runs the model checks against a connection
def test_the_settings_of_the_example_project_pass() -> None:
    assert [m for m in run_checks(tags=[TAG]) if m.id == "scheduler_app.E008"] == []
