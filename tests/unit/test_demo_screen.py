"""The demo's table is redrawn in place on a terminal, and appended anywhere else."""

from __future__ import annotations

import io

import pytest

from project.demo.screen import LiveTable, screen_rows


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def eighty_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("LINES", "24")


def test_on_a_terminal_each_table_replaces_the_last() -> None:
    screen = Terminal()
    table = LiveTable(screen)
    table.show("header\nrow 1")
    table.show("header\nrow 1\nrow 2")
    table.show("header")
    # Up the two rows of the first table, erase, draw; then up the three of the second.
    assert screen.getvalue() == (
        "header\nrow 1\n\x1b[2F\x1b[Jheader\nrow 1\nrow 2\n\x1b[3F\x1b[Jheader\n"
    )


def test_a_file_gets_every_table_without_cursor_codes() -> None:
    log = io.StringIO()
    table = LiveTable(log)
    table.show("a")
    table.show("b")
    assert log.getvalue() == "a\nb\n"


def test_a_line_wider_than_the_screen_takes_two_rows() -> None:
    assert screen_rows("x" * 80, 80) == 1
    assert screen_rows("x" * 81 + "\n\nshort", 80) == 4
