"""A ``Timing`` remembers its hash (the beat looks timings up per slot): the same hash the
dataclass computes, equal timings hash equal, and a pickled timing hashes anew."""

from __future__ import annotations

import copy
import pickle
from datetime import UTC, datetime

from scheduler_app.timing import build_timing
from scheduler_app.timing.rules import _HASHED, Timing


def made() -> Timing:
    return build_timing(
        kind="cron",
        rule="30 9 * * MON-FRI",
        timezone="Europe/Riga",
        window="MON-FRI 09:00-18:00",
        starts_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


def test_the_hash_is_the_dataclass_hash_remembered() -> None:
    timing = made()
    fields = tuple(getattr(timing, field.name) for field in _HASHED)
    assert {field.name for field in _HASHED} >= {"rule", "zone", "window", "starts_at"}
    assert hash(timing) == hash(fields) == hash(made())
    assert timing == made() and {timing: 1}[made()] == 1
    assert "_hash" in timing.__dict__


def test_another_timing_hashes_apart_and_a_copy_hashes_anew() -> None:
    timing = made()
    hash(timing)
    other = build_timing(kind="cron", rule="30 9 * * MON-FRI", timezone="Europe/Tallinn")
    assert other != timing and hash(other) != hash(timing)
    for again in (pickle.loads(pickle.dumps(timing)), copy.deepcopy(timing)):
        assert "_hash" not in again.__dict__
        assert again == timing and hash(again) == hash(timing)
