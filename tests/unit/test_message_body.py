"""A filled-in message's body is the bytes kombu's serializer writes (``publishing.messages``):
the standard encoder for a payload of JSON's own types, kombu's own for anything else or for a
JSON serializer a project registered itself."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kombu import serialization
from kombu.exceptions import EncodeError
from kombu.serialization import dumps as serialize

from scheduler_app.publishing import messages
from scheduler_app.publishing.messages import _EMBED, _body, _Template
from tests.subclasses import Letter, Loud, Number

JSON = _Template(
    {"content_type": "application/json", "content_encoding": "utf-8"}, "", "celery", "json"
)
PAYLOADS: list[Any] = [
    {},
    {"report": "daily", "format": "pdf", "n": 1},
    {"é": "ü\n\"'\\\u2028", "emoji": "🙂", "nested": {"list": [1, 2.5, None, True, [], {}]}},
    {"big": 2**70, "small": -(2**63), "float": 1e-300, "nan": float("nan"), "inf": float("inf")},
    {"1": "keys", "": "empty"},
]


def kombus(kwargs: Any) -> tuple[str, str, Any]:
    encoded: tuple[str, str, Any] = serialize(((), kwargs, _EMBED), serializer="json")
    return encoded


@pytest.mark.parametrize("kwargs", PAYLOADS)
def test_a_payload_of_json_types_is_encoded_as_kombu_encodes_it(kwargs: Any) -> None:
    assert _body(JSON, kwargs) == kombus(kwargs)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(st.dictionaries(st.text(), json_values, max_size=6))
def test_any_payload_of_json_types_is_encoded_as_kombu_encodes_it(kwargs: Any) -> None:
    assert _body(JSON, kwargs) == kombus(kwargs)


@pytest.mark.parametrize(
    "value", [datetime(2026, 1, 5, tzinfo=UTC), uuid.uuid4(), Decimal("1.10"), b"raw"]
)
def test_a_type_only_kombu_encodes_goes_through_kombu(value: Any) -> None:
    assert _body(JSON, {"v": value}) == kombus({"v": value})


@pytest.fixture
def own_json() -> Iterator[None]:
    """A project's own ``json`` serializer (sorted keys), kombu's put back afterwards."""
    codec = serialization.registry._encoders["json"]  # type: ignore[attr-defined]
    decoder = serialization.registry._decoders["application/json"]  # type: ignore[attr-defined]
    serialization.register(
        "json",
        lambda value: json.dumps(value, sort_keys=True),
        decoder,
        content_type="application/json",
        content_encoding="utf-8",
    )
    try:
        yield
    finally:
        serialization.register(
            "json", codec.encoder, decoder, codec.content_type, codec.content_encoding
        )
    assert messages._kombu_json()


def test_a_json_serializer_the_project_registered_is_used_as_is(own_json: None) -> None:
    kwargs = {"b": 1, "a": 2}
    assert not messages._kombu_json()
    assert _body(JSON, kwargs) == kombus(kwargs)
    assert _body(JSON, kwargs)[2].index('"a"') < _body(JSON, kwargs)[2].index('"b"')


@pytest.mark.parametrize(
    "kwargs",
    [
        {"letter": Letter.A, "number": Number.ONE, "loud": Loud("q")},
        {1: "int key", None: "none key", 2.5: "float key"},
        {True: "bool key", False: 0},
        {"tuple": (1, 2), "point": [(3, 4)]},
    ],
)
def test_subclasses_and_keys_json_converts_come_out_as_kombus(kwargs: Any) -> None:
    assert _body(JSON, kwargs) == kombus(kwargs)


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("kwargs", [{"deep": _nested(100_000)}, {(1, 2): "a tuple key"}])
def test_what_kombu_refuses_is_refused_as_kombu_refuses_it(kwargs: Any) -> None:
    """``EncodeError`` (a broker error of kombu's, which the batch path reports as not
    published), never the encoder's own ``RecursionError`` or ``TypeError`` (review 19). How
    deep a payload the encoder refuses depends on the Python version: what kombu writes, the
    same bytes."""
    try:
        expected = kombus(kwargs)
    except EncodeError:
        with pytest.raises(EncodeError):
            _body(JSON, kwargs)
    else:
        assert _body(JSON, kwargs) == expected
