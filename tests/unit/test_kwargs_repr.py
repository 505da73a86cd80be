"""The ``kwargsrepr`` header: the fast path writes exactly what Celery's ``saferepr`` writes."""

from __future__ import annotations

from typing import Any

from celery.utils.saferepr import saferepr
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_app.publishing.messages import kwargs_repr

SIZE, LEVELS = 1024, 3
scalars = (
    st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.booleans()
    | st.none()
    | st.text(max_size=300)
)
payloads = st.dictionaries(st.text(max_size=20), scalars | st.lists(scalars, max_size=3))


@settings(max_examples=2000, deadline=None)
@given(payloads)
def test_the_header_is_celerys_for_any_payload(kwargs: dict[str, Any]) -> None:
    assert kwargs_repr(kwargs, SIZE, LEVELS) == saferepr(kwargs, SIZE, maxlevels=LEVELS)


def test_the_header_is_celerys_at_the_size_limit() -> None:
    for length in range(980, 1040):
        for kwargs in ({"a": "x" * length}, {"a": "x" * (length // 2), "b": 7}):
            assert kwargs_repr(kwargs, SIZE, LEVELS) == saferepr(kwargs, SIZE, maxlevels=LEVELS)


def test_no_levels_and_odd_text_go_through_saferepr() -> None:
    for kwargs in ({"a": 1}, {"quote": "it's"}, {"tab": "a\tb"}, {"nested": {"n": 1}}):
        for levels in (0, 1, 3):
            assert kwargs_repr(kwargs, SIZE, levels) == saferepr(kwargs, SIZE, maxlevels=levels)
