"""The multiprocess directory a prefork worker prepares for its pool's metrics."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.test import override_settings
from prometheus_client import values

from scheduler_app.monitoring import workers


@pytest.fixture(autouse=True)
def no_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(workers.ENV, raising=False)


def test_a_prefork_pool_gets_a_directory_removed_at_shutdown() -> None:
    path = workers.prepare("prefork")
    try:
        assert path is not None and Path(path).is_dir()
        assert os.environ[workers.ENV] == path
        assert values.ValueClass is not values.MutexValue  # children write files there
    finally:
        workers.forget()
    assert not Path(path).exists()
    assert workers.ENV not in os.environ
    assert values.ValueClass is values.MutexValue


@pytest.mark.parametrize("pool", ["solo", "threads"])
def test_other_pools_keep_their_counters_in_process(pool: str) -> None:
    assert workers.prepare(pool) is None
    assert workers.ENV not in os.environ


def test_a_directory_set_by_hand_is_used_and_kept(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(workers.ENV, str(tmp_path))
    assert workers.prepare("prefork") == str(tmp_path)
    workers.forget()
    assert tmp_path.is_dir()


@override_settings(SCHEDULER_WORKER_METRICS=False)
def test_the_setting_turns_it_off() -> None:
    assert workers.prepare("prefork") is None
