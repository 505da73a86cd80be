"""What the contract's management commands share: output paths, progress bars, exit codes.

Every bad argument (a file that cannot be read, a directory that does not exist, an instant
without an offset) is one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from django.core.management.base import CommandError, OutputWrapper
from tqdm import tqdm

from scheduler_app.contract.export import write_atomically

BAD_ARGUMENT = 2
"""Exit status for bad arguments and invalid input files (nothing was written)."""
REFUSED = 1
"""Exit status when the command ran but refused some entries (they are listed on stderr)."""
PROGRESS_MIN = 200
"""Fewer items than this finish too fast for a progress bar to help."""


def bad_argument(message: str) -> CommandError:
    """The one line a bad argument ends the command with (exit status 2)."""
    return CommandError(message, returncode=BAD_ARGUMENT)


def output_path(name: str) -> Path:
    """A path the command may write (atomically) to; refused with exit 2 otherwise."""
    path = Path(name)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise bad_argument(f"cannot write {name}: it is a directory")
    if not parent.is_dir():
        raise bad_argument(
            f"cannot write {name}: the directory {parent} does not exist; create it first"
        )
    return path


def write_output(stdout: OutputWrapper, target: Path | None, pieces: Iterable[str]) -> None:
    """``pieces`` to ``target`` (from ``output_path``) atomically, else to the command's
    stdout; a file that cannot be written is one line and exit 2."""
    try:
        if target is None:
            getattr(stdout, "_out", sys.stdout).writelines(pieces)
        else:
            write_atomically(target, pieces)
    except OSError as exc:
        raise bad_argument(f"cannot write {target}: {exc.strerror}") from None


def read_input(name: str) -> str:
    """A file's text (``-``: stdin); exit 2 with one line when it cannot be read."""
    try:
        if name == "-":
            return sys.stdin.read()
        return Path(name).read_text(encoding="utf-8")
    except FileNotFoundError:
        reason = "no such file"
    except IsADirectoryError:
        reason = "it is a directory"
    except UnicodeDecodeError as exc:
        reason = f"not UTF-8 text (byte {exc.start}); save it as UTF-8"
    except OSError as exc:
        reason = str(exc.strerror)
    raise bad_argument(f"cannot read {name}: {reason}")


def instant_argument(value: str, option: str) -> datetime:
    """An ``--since``/``--until`` value: ISO 8601 with an offset (``Z`` allowed)."""
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "Zz" else text)
    except ValueError:
        raise bad_argument(
            f"{option} {value!r} is not an ISO 8601 instant; e.g. 2026-03-01T00:00:00Z"
        ) from None
    if parsed.tzinfo is None:
        raise bad_argument(f"{option} {value!r} has no UTC offset; add one, e.g. Z or +02:00")
    return parsed


class Progress:
    """A tqdm bar on ``stream`` when it is a terminal and the work is long; silent otherwise."""

    def __init__(self, stream: TextIO, *, enabled: bool | None = None) -> None:
        self.stream = stream
        self.enabled = enabled

    def __call__(self, description: str, total: int) -> Any:
        shown = self.enabled
        if shown is None:
            shown = _is_terminal(self.stream) and total >= PROGRESS_MIN
        return tqdm(
            desc=description, total=total, file=self.stream, disable=not shown, unit=" items"
        )


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def add_progress_arguments(parser: Any) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--progress",
        dest="progress",
        action="store_true",
        default=None,
        help="Always show a progress bar on stderr (default: on a terminal, for long runs).",
    )
    group.add_argument(
        "--no-progress", dest="progress", action="store_false", help="Never show a progress bar."
    )
