"""What a schedule.v1 document's parts report to: ``Collector`` gathers the problems of one
document instead of stopping at the first."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scheduler_app.authoring.importing import Problem


class Collector:
    """Gathers the problems of one document instead of stopping at the first."""

    def __init__(self, label: str, memo: dict[Any, Any] | None = None) -> None:
        self.label = label
        self.memo: dict[Any, Any] = {} if memo is None else memo
        """Answers that do not change within one file (allowlist, job types), by question."""
        self.problems: list[Problem] = []
        self.paths: dict[str, str] = {}
        """Model field -> where this document wrote it, when not at its native place."""

    def add(self, path: str, message: str) -> None:
        self.problems.append(Problem(self.label, path, message))

    def section(self, doc: dict[str, Any], name: str, allowed: Iterable[str]) -> dict[str, Any]:
        value = doc.get(name, {})
        if not isinstance(value, dict):
            self.add(name, "must be an object")
            return {}
        for unknown in sorted(set(value) - set(allowed)):
            self.add(f"{name}.{shown(unknown)}", "unknown field; see docs/contract.md")
        return value


def shown(name: str) -> str:
    """A field name from the file, safe to print: short, and quoted when it is not plain text."""
    if name.isprintable() and len(name) <= 40 and name.strip() == name and name:
        return name
    return repr(name[:40]) + ("..." if len(name) > 40 else "")
