"""The browser tests' turns on the in-memory SQLite connection the live server shares with the
test (``tests/acceptance/browser/conftest.py``): the test gives it up only while a WebDriver
command runs, and has it back before the command returns. Each test takes turns on a lock of
its own: the browser session's fixture holds the shared ``TURN`` on this thread while the
session lasts (this file can run in a process that ran the browser tests before)."""

from __future__ import annotations

import threading

import pytest

from tests.acceptance.browser.conftest import _TurnTaking


def _can_take_turn(turn: threading.RLock, wait: float) -> bool:
    """Whether another thread (a request of the live server) can take ``turn`` within
    ``wait`` seconds (a free lock is taken at once)."""
    taken: list[bool] = []

    def request() -> None:
        got = turn.acquire(timeout=wait)
        taken.append(got)
        if got:
            turn.release()

    thread = threading.Thread(target=request)
    thread.start()
    thread.join()
    return taken == [True]


def test_a_request_runs_only_while_a_browser_command_does() -> None:
    during: list[bool] = []

    def execute(command: str) -> str:
        during.append(_can_take_turn(turn, wait=5))
        return f"{command} done"

    turn = threading.RLock()
    turn.acquire()
    try:
        assert _TurnTaking(execute, turn)("click") == "click done"
        after = _can_take_turn(turn, wait=0.05)
    finally:
        turn.release()
    assert during == [True] and after is False


def test_a_failed_command_gives_the_turn_back_to_the_test() -> None:
    def execute(command: str) -> str:
        raise TimeoutError(command)

    turn = threading.RLock()
    turn.acquire()
    try:
        with pytest.raises(TimeoutError):
            _TurnTaking(execute, turn)("get")
        after = _can_take_turn(turn, wait=0.05)
    finally:
        turn.release()
    assert after is False
