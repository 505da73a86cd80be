"""Model instances from the columns of a hand-written statement, converted as the ORM would."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, TypeVar, cast

from django.db import connection
from django.db.models import Model

M = TypeVar("M", bound=Model)
Converter = Callable[[Any, Any, Any], Any]


def columns(model: type[Model], alias: str, prefix: str = "") -> str:
    """``alias."col", ...``: every concrete column of ``model``, in field order (named
    ``<prefix>_col`` when a prefix is given: several tables' columns in one row)."""
    return ", ".join(
        f'{alias}."{field.column}"' + (f' AS "{prefix}_{field.column}"' if prefix else "")
        for field in model._meta.concrete_fields
    )


def width(model: type[Model]) -> int:
    return len(model._meta.concrete_fields)


def build(model: type[M], values: Sequence[Any]) -> M:
    """``model`` as loaded from the database, from its columns in ``columns`` order."""
    names, converting = _plan(model, connection.vendor)
    converted = list(values)
    for index, expression, converters in converting:  # only the columns that convert
        value = converted[index]
        for convert in converters:
            value = convert(value, expression, connection)
        converted[index] = value
    return model.from_db(connection.alias, names, converted)


@cache
def _plan(
    model: type[Model], vendor: str
) -> tuple[list[str], list[tuple[int, Any, list[Converter]]]]:
    """The field names in column order, and the columns that have converters (JSON decoding,
    SQLite dates, ...) with the ORM's converters for them, per backend: worked out once."""
    names = [field.attname for field in model._meta.concrete_fields]
    converting = []
    for index, field in enumerate(model._meta.concrete_fields):
        field = cast(Any, field)
        expression = field.get_col(model._meta.db_table)
        converters = [
            *connection.ops.get_db_converters(expression),
            *field.get_db_converters(connection),
        ]
        if converters:
            converting.append((index, expression, converters))
    return names, converting
