"""Values that are ``str`` or ``int`` by type but not exactly: what JSON writes as their value
while ``str()`` says something else (payloads and columns of the hot path's encoders)."""

from __future__ import annotations

import enum


class Letter(str, enum.Enum):  # noqa: UP042 - a mixin enum, on purpose
    A = "a"


class Number(int, enum.Enum):
    ONE = 1


class Loud(str):
    def __str__(self) -> str:
        return self.upper()
