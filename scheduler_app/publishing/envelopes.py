"""The Redis payload of a message kind, JSON-encoded once and filled in per message.

kombu's Redis transport LPUSHes ``dumps(message)``: the whole envelope (body, headers,
properties) encoded again for every message, although within one kind of message (task,
routing, with or without eta and expiry, the same trace headers) only a few values differ.
An ``Envelope`` is the payload of one fully built message of a kind, encoded once with its
varying values replaced by markers and split around them; a later message of the kind is its
fragments joined with its own values, each encoded alone. JSON encodes a dict key by key, so
the result is the bytes ``dumps`` would produce for the whole message, provided the values are
encoded with the same encoder and the keys keep their order: ``learn`` checks that on the
message it learns from (filled in from that message's own values, the payload must equal
kombu's byte for byte) and refuses the kind otherwise, which then keeps kombu's path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from typing import Any

from kombu.utils.json import dumps

from scheduler_app.handoff.protocol import HEADER
from scheduler_app.observability.tracing import TRACE_HEADERS

Slot = tuple[str, str]
"""Where a varying value sits: ("body", ""), ("headers", name) or ("properties", name)."""

VARYING_HEADERS = frozenset({"id", "root_id", "eta", "expires", "kwargsrepr", HEADER})
VARYING_HEADERS |= frozenset(TRACE_HEADERS)
"""The headers ``MessageBuilder`` fills in per message (the others are the kind's)."""
VARYING_PROPERTIES = frozenset({"correlation_id", "expiration", "delivery_tag"})
"""Per message: the task id, the expiry, and the tag the transport gives each message."""

_MARK = "\x00scheduler-envelope-{}\x00"


@dataclass(frozen=True)
class Envelope:
    """One kind's payload as fragments around its varying values."""

    fragments: tuple[str, ...]
    slots: tuple[Slot, ...]

    def payload(self, body: str, headers: dict[str, Any], properties: dict[str, Any]) -> str:
        """The payload of a message of this kind with these values (only the varying ones
        are read)."""
        parts = [self.fragments[0]]
        for (where, name), fragment in zip(self.slots, self.fragments[1:], strict=True):
            if where == "body":
                value: Any = body
            elif where == "headers":
                value = headers[name]
            else:
                value = properties[name]
            parts.append(_encode(value))
            parts.append(fragment)
        return "".join(parts)


_ENCODER = json.JSONEncoder()


def _encode(value: Any) -> str:
    """A value as kombu's ``dumps`` encodes it inside the message. Strings, ``None`` and
    containers of plain JSON values (all a message's varying values usually are) through the
    standard library's encoder, which writes them the same way (kombu's only adds a
    ``default`` for other types) without building an encoder per call; anything else through
    kombu's."""
    if type(value) is str:
        return encode_basestring_ascii(value)
    if value is None:
        return "null"
    try:
        return _ENCODER.encode(value)
    except TypeError:  # a type only kombu's encoder knows (a datetime, a UUID...)
        return str(dumps(value))


def learn(message: dict[str, Any]) -> Envelope | None:
    """The envelope of ``message`` (a fully built, transport-augmented message), or None
    when its fragments do not give back ``dumps(message)`` exactly."""
    headers, properties = message.get("headers"), message.get("properties")
    if not isinstance(headers, dict) or not isinstance(properties, dict):
        return None
    if not isinstance(message.get("body"), str):
        return None
    slots: list[Slot] = [("body", "")]
    slots += [("headers", name) for name in headers if name in VARYING_HEADERS]
    slots += [("properties", name) for name in properties if name in VARYING_PROPERTIES]
    marked = dict(message, headers=dict(headers), properties=dict(properties))
    for index, (where, name) in enumerate(slots):
        if where == "body":
            marked["body"] = _MARK.format(index)
        else:
            marked[where][name] = _MARK.format(index)
    encoded = str(dumps(marked))
    fragments: list[str] = []
    for index in range(len(slots)):
        before, found, encoded = encoded.partition(json.dumps(_MARK.format(index)))
        if not found:
            return None
        fragments.append(before)
    fragments.append(encoded)
    envelope = Envelope(tuple(fragments), tuple(slots))
    if envelope.payload(message["body"], headers, properties) != dumps(message):
        return None
    return envelope
