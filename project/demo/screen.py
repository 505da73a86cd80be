"""The demo's live table, redrawn in place on a terminal (plain ANSI cursor codes)."""

from __future__ import annotations

import math
import shutil
from typing import TextIO

UP_AND_CLEAR = "\x1b[{rows}F\x1b[J"
"""Cursor up ``rows`` lines to their first column (CSI F), then erase to the end (CSI J)."""


class LiveTable:
    """Shows a block of text; on a terminal, each new block replaces the previous one.

    Anything else (a file, a pipe) gets every block, one after the other, as a log would."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.redraw = stream.isatty()
        self.rows = 0

    def show(self, text: str) -> None:
        if self.redraw and self.rows:
            self.stream.write(UP_AND_CLEAR.format(rows=self.rows))
        self.stream.write(text + "\n")
        self.stream.flush()
        self.rows = screen_rows(text, shutil.get_terminal_size().columns)


def screen_rows(text: str, columns: int) -> int:
    """The terminal rows ``text`` takes: a line longer than the screen wraps."""
    return sum(max(1, math.ceil(len(line) / max(columns, 1))) for line in text.split("\n"))
