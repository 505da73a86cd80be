"""Date arithmetic the ORM cannot write portably: an instant plus a number of seconds."""

from __future__ import annotations

from typing import Any

from django.db.models import DateTimeField, Func

TEMPLATES = {
    "postgresql": "({instant} + ({seconds}) * INTERVAL '1 second')",
    # Django stores "YYYY-MM-DD HH:MM:SS[.ffffff]" (UTC) on SQLite; strftime keeps that shape.
    "sqlite": "strftime('%Y-%m-%d %H:%M:%f', {instant}, ({seconds}) || ' seconds')",
    "mysql": "TIMESTAMPADD(SECOND, ({seconds}), {instant})",
}


class ShiftSeconds(Func):
    """``instant + seconds`` (``seconds`` an integer expression, negative to go back).

    Django refuses ``integer * interval`` on SQLite, so each backend gets its own SQL.
    """

    output_field = DateTimeField()
    arity = 2

    def as_sql(  # type: ignore[override]
        self, compiler: Any, connection: Any, **extra: Any
    ) -> tuple[str, list[Any]]:
        instant, seconds = self.get_source_expressions()
        instant_sql, instant_params = compiler.compile(instant)
        seconds_sql, seconds_params = compiler.compile(seconds)
        template = TEMPLATES.get(connection.vendor, TEMPLATES["postgresql"])
        if connection.vendor == "sqlite":
            template = template.replace("%", "%%")  # the driver's parameter style
        sql = template.format(instant=instant_sql, seconds=seconds_sql)
        if connection.vendor == "mysql":
            return sql, [*seconds_params, *instant_params]
        return sql, [*instant_params, *seconds_params]
