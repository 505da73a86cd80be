"""The schedule form's parts: the widgets and fields it is made of (a text input with
suggestions, the JSON fields of the payload), and where an engine error on a rule's part is
shown (``error_target``: ``cron.hour`` on the rule, or on the builder's repeat)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any
from zoneinfo import available_timezones

from django import forms

FIELD_OF_ERROR = {
    "cron": "rule",
    "rrule": "rule",
    "at": "rule",
    "every": "rule",
    "solar": "rule",
    "window": "active_window",
    "dst": "dst_nonexistent",
    "range": "rule",
}


@cache
def zone_names() -> tuple[str, ...]:
    return tuple(sorted(available_timezones()))


class DatalistInput(forms.TextInput):
    """A text input with a ``<datalist>`` of suggestions: searchable in every browser."""

    template_name = "admin/scheduler_app/widgets/datalist.html"

    def __init__(self, options: tuple[str, ...] | list[str] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.options = list(options)

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        list_id = f"{context['widget']['attrs'].get('id', name)}_options"
        context["widget"]["attrs"]["list"] = list_id
        context["widget"]["list_id"] = list_id
        context["widget"]["options"] = self.options
        return context


def has_lone_surrogate(text: str) -> bool:
    """A UTF-16 surrogate on its own (JSON ``"\\ud800"``): no UTF-8 page can show it."""
    return any("\ud800" <= char <= "\udfff" for char in text)


class PayloadJSONField(forms.JSONField):
    """JSON that a page can show again: a lone surrogate is a field error (it could never
    be stored as text, nor published), and the redisplayed value is escaped as ASCII when it
    holds one, instead of failing to encode the page (an HTTP 500)."""

    def to_python(self, value: Any) -> Any:
        converted = super().to_python(value)
        if has_lone_surrogate(json.dumps(converted, ensure_ascii=False, cls=self.encoder)):
            raise forms.ValidationError(
                "contains a lone UTF-16 surrogate (such as \\ud800), which is not valid "
                "Unicode text; remove it or write the character itself",
                code="surrogate",
            )
        return converted

    def prepare_value(self, value: Any) -> Any:
        text = super().prepare_value(value)
        if isinstance(text, str) and has_lone_surrogate(text):
            return json.dumps(value, ensure_ascii=True, cls=self.encoder)
        return text


def error_target(field: str, fields: Any, *, built: bool) -> str | None:
    """The form field that shows an engine error on ``field`` (``cron.hour`` -> ``rule``)."""
    head = field.split(".")[0]
    target = FIELD_OF_ERROR.get(head, head)
    if target == "text":
        return "words" if "words" in fields else None
    if target == "rule" and built:
        target = "repeat"
    return target if target in fields else None


def error_message(field: str, message: str) -> str:
    """Name the part of the rule, as ``schedule_preview`` does: ``cron field "hour": ...``."""
    head, _, part = field.partition(".")
    if head in ("cron", "rrule") and part:
        return f'{head} field "{part}": {message}'
    return message
