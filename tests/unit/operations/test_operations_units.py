"""Pure pieces of the operations code: durations in words, cadences, secret-looking keys."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scheduler_app.monitoring.lateness import nearest_rank
from scheduler_app.monitoring.monitor import _first_line, human_duration
from scheduler_app.safety.payloads import looks_secret
from scheduler_app.ticker import Every

T0 = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seconds", "words"),
    [(30, "30 s"), (119, "119 s"), (2700, "45 min"), (7200, "2 h"), (9000, "2 h 30 min"),
     (97200, "27 h"), (183600, "2 d 3 h"), (172800, "2 d")],
)  # fmt: skip
def test_durations_in_words(seconds: int, words: str) -> None:
    assert human_duration(seconds) == words


def test_the_error_line_of_a_traceback() -> None:
    assert _first_line("Traceback (most recent call last):\n  x\nTimeoutError: 30 s\n\n") == (
        "TimeoutError: 30 s"
    )
    assert _first_line("") == ""


def test_a_cadence_runs_at_start_then_every_interval_and_survives_a_clock_step_back() -> None:
    every = Every(60)
    assert every.due(T0)
    assert not every.due(T0 + timedelta(seconds=59))
    assert every.due(T0 + timedelta(seconds=60))
    assert every.due(T0 - timedelta(hours=1))  # stepped back: not an hour of silence
    assert not every.due(T0 - timedelta(hours=1) + timedelta(seconds=30))
    assert not Every(60, at_start=False).due(T0)


@pytest.mark.parametrize(
    "key", ["password", "db_password", "API_KEY", "apiKey", "accessToken", "secret", "pin", "auth"]
)
def test_secret_looking_keys(key: str) -> None:
    assert looks_secret(key)


@pytest.mark.parametrize(
    "key", ["password_ref", "token_name", "max_tokens", "spin", "bypass", "author", "count"]
)
def test_ordinary_keys_and_references(key: str) -> None:
    assert not looks_secret(key)


def test_percentiles_pick_a_sample_by_nearest_rank() -> None:
    """The one method the monitoring page and scheduler_status share: rank ceil(p * n)."""
    values = [float(n) for n in range(1, 101)]
    assert (nearest_rank(values, 0.5), nearest_rank(values, 0.99)) == (50.0, 99.0)
