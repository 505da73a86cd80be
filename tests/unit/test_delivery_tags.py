"""The Redis batch path's delivery tags are what kombu's virtual channel makes (``str(uuid4())``,
each one new), drawn from one read of the system's randomness per batch of tags."""

from __future__ import annotations

import uuid
from itertools import islice

from kombu.transport.virtual import Channel as VirtualChannel

from scheduler_app.publishing.redis import delivery_tags


class Kombus(VirtualChannel):
    def __init__(self) -> None:  # no connection: only the tag is asked of it
        pass


class Own(Kombus):
    def __init__(self) -> None:
        self.given = 0

    def _next_delivery_tag(self) -> str:
        self.given += 1
        return f"own-{self.given}"


def test_tags_are_uuid4_text_as_kombu_writes_it_and_never_repeat() -> None:
    tags = list(islice(delivery_tags(Kombus(), per_read=7), 5000))
    assert len(set(tags)) == len(tags)
    for tag in tags:
        parsed = uuid.UUID(tag)
        assert (str(parsed), parsed.version, parsed.variant) == (tag, 4, uuid.RFC_4122)
    assert len({tag[14] for tag in tags}) == 1  # the version digit; the rest is random
    assert len({tag[0] for tag in tags}) == 16


def test_a_channel_with_its_own_tags_is_asked_for_each() -> None:
    channel = Own()
    assert list(islice(delivery_tags(channel), 3)) == ["own-1", "own-2", "own-3"]
