"""The browser tests' turns on the in-memory SQLite connection the live server shares with the
test (``tests/acceptance/browser/conftest.py``): the test gives it up only while a WebDriver
command runs, and has it back before the command returns."""

from __future__ import annotations

import threading

import pytest

from tests.acceptance.browser.conftest import TURN, _TurnTaking


def _can_take_turn(wait: float) -> bool:
    """Whether another thread (a request of the live server) can take the turn within
    ``wait`` seconds. Where the turn should be free the wait is long: a free lock is taken at
    once, and a request still running from an earlier browser test in this process (the live
    server's threads are the test's neighbours) may hold it for a moment; where it should be
    held by this test, whose thread alone can give it back, a short wait is enough."""
    taken: list[bool] = []

    def request() -> None:
        got = TURN.acquire(timeout=wait)
        taken.append(got)
        if got:
            TURN.release()

    thread = threading.Thread(target=request)
    thread.start()
    thread.join()
    return taken == [True]


def test_a_request_runs_only_while_a_browser_command_does() -> None:
    during: list[bool] = []

    def execute(command: str) -> str:
        during.append(_can_take_turn(wait=30))
        return f"{command} done"

    TURN.acquire()
    try:
        assert _TurnTaking(execute)("click") == "click done"
        after = _can_take_turn(wait=0.05)
    finally:
        TURN.release()
    assert during == [True] and after is False


def test_a_failed_command_gives_the_turn_back_to_the_test() -> None:
    def execute(command: str) -> str:
        raise TimeoutError(command)

    TURN.acquire()
    try:
        with pytest.raises(TimeoutError):
            _TurnTaking(execute)("get")
        after = _can_take_turn(wait=0.05)
    finally:
        TURN.release()
    assert after is False
