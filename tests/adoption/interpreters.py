"""The Python interpreters of the supported versions, found as this machine has them.

The machines this project runs on (developers' and CI's) keep Python 3.11, 3.12 and 3.13
under pyenv (``~/.pyenv/versions/3.13.0/bin/python3.13``); pyenv's shims answer only for the
global version, so the interpreter is looked up in pyenv's versions first, then on ``PATH``.
The noxfile (the matrix) and the fresh-venv adoption tests use the same lookup.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def pyenv_root() -> Path:
    return Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")


def find_python(version: str) -> str | None:
    """The newest ``pythonX.Y`` of pyenv's versions, else a working one on ``PATH``."""
    name = f"python{version}"
    found = sorted(
        pyenv_root().glob(f"versions/{version}.*/bin/{name}"),
        key=lambda path: [int(part) for part in path.parts[-3].split(".") if part.isdigit()],
    )
    if found:
        return str(found[-1])
    on_path = shutil.which(name)
    # A pyenv shim of a version that is not global is on PATH and fails when run.
    if on_path and subprocess.run([on_path, "-c", ""], capture_output=True).returncode == 0:
        return on_path
    return None
