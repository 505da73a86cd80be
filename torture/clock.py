"""The injected clock of the harness's processes: real time plus an offset read from a file.

Every beat and worker the harness starts reads the same file, so stepping the offset is a
clock step on the whole "host" (as an NTP step would be), and a fixed offset puts the run in
another season (the DST scenarios run across a real transition this way).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from scheduler_app.clock import Clock, SystemClock

ENV = "TORTURE_CLOCK_FILE"


class OffsetClock:
    """``now()`` = the real UTC time + the offset (seconds, a float) stored in ``path``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._stamp: tuple[int, int, int] | None = None
        self._offset = timedelta(0)

    def now(self) -> datetime:
        try:
            info = os.stat(self.path)
            stamp: tuple[int, int, int] | None = (info.st_ino, info.st_mtime_ns, info.st_size)
        except FileNotFoundError:
            stamp = None
        if stamp != self._stamp:
            self._stamp = stamp
            self._offset = timedelta(seconds=read_offset(self.path))
        return datetime.now(UTC) + self._offset

    def set_offset(self, seconds: float) -> None:
        """Step the clock of every process reading this file (written atomically)."""
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(repr(float(seconds)))
        os.replace(temporary, self.path)  # a new inode: readers notice the change

    @property
    def offset(self) -> float:
        return read_offset(self.path)


def read_offset(path: Path) -> float:
    try:
        return float(path.read_text() or 0.0)
    except (FileNotFoundError, ValueError):
        return 0.0


def harness_clock() -> Clock:
    """The clock a harness process uses: the offset clock when the harness set one up."""
    path = os.environ.get(ENV)
    return OffsetClock(path) if path else SystemClock()
