"""Fixtures of the integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.partition_support import JAN, drop_partitions


@pytest.fixture
def january_dropped_after() -> Iterator[None]:
    """The January partitions a test makes outlive its flush (DDL): dropped afterwards."""
    yield
    drop_partitions(JAN)
