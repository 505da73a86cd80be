"""The backoff of a delivery whose claim met the database down, and the header that counts
its tries (``scheduler_app.worker.redelivery``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from scheduler_app.worker.redelivery import CLAIM_TRIES, MAX_DELAY, MAX_TRIES, delay, tries


def test_the_delay_doubles_up_to_a_ceiling_then_gives_up() -> None:
    delays = [delay(before) for before in range(MAX_TRIES + 2)]
    assert delays[:6] == [1.0, 2.0, 4.0, 8.0, 16.0, MAX_DELAY]
    assert delays[MAX_TRIES - 1] == MAX_DELAY
    assert delays[MAX_TRIES:] == [None, None]
    assert sum(d for d in delays if d is not None) < 300  # bounded: then the dispatch timeout


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (SimpleNamespace(), 0),  # the beat's message
        (SimpleNamespace(**{CLAIM_TRIES: 3}), 3),
        (SimpleNamespace(headers={CLAIM_TRIES: 2}), 2),
        (SimpleNamespace(**{CLAIM_TRIES: -5}), 0),  # forged: never below zero
        (SimpleNamespace(**{CLAIM_TRIES: "7"}), 0),
        (SimpleNamespace(**{CLAIM_TRIES: True}), 0),
    ],
)
def test_the_tries_come_from_the_header_and_a_bad_one_counts_as_none(
    request_: SimpleNamespace, expected: int
) -> None:
    assert tries(request_) == expected
