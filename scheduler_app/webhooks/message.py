"""One delivery's request: the occurrence as a CloudEvents 1.0 event in structured JSON mode
(the ``cloudevents`` package), signed as the Standard Webhooks spec says (the
``standardwebhooks`` package).

- ``id`` = the occurrence id, also the ``webhook-id`` header: every delivery of one occurrence
  (a retry, a replay, a delivery again after a crash) carries the same id, on which a receiver
  deduplicates;
- ``source`` = ``SCHEDULER_EVENT_SOURCE/schedules/<key or id>``; ``type`` = the schedule's
  event type; ``time`` = ``scheduled_for``; ``data`` = ``{"payload": <kwargs>, "occurrence":
  <the context a task gets>}``; ``tenant`` (an extension attribute) = the schedule's tenant,
  when it has one, so that a receiver shared by several tenants can tell them apart;
- ``webhook-signature`` holds one ``v1,<base64>`` per secret of the endpoint, space-separated,
  so a receiver holding either the new or the old secret accepts it while one is rotated.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cloudevents.core.bindings.http import to_structured
from cloudevents.core.formats.json import JSONFormat
from cloudevents.core.v1.event import CloudEvent
from standardwebhooks.webhooks import Webhook

from scheduler_app.conf import get_settings
from scheduler_app.handoff.allowlist import event_type_of
from scheduler_app.handoff.endpoints import Endpoint
from scheduler_app.handoff.protocol import context_headers
from scheduler_app.models import Occurrence
from scheduler_app.observability import tracing
from scheduler_app.observability.pinned import USER_AGENT

FORMAT = JSONFormat()


@dataclass(frozen=True)
class Message:
    body: bytes
    headers: dict[str, str]


def event(occurrence: Occurrence) -> CloudEvent:
    """The CloudEvent of ``occurrence`` (its schedule and version loaded)."""
    schedule = occurrence.schedule
    source = f"{get_settings().EVENT_SOURCE.rstrip('/')}/schedules/{schedule.key or schedule.pk}"
    data: dict[str, Any] = {
        "payload": occurrence.kwargs,
        "occurrence": context_headers(occurrence),
    }
    attributes: dict[str, Any] = {
        "id": str(occurrence.pk),
        "source": source,
        "type": event_type_of(occurrence.task) or occurrence.task,
        "time": occurrence.scheduled_for,
        "datacontenttype": "application/json",
    }
    if schedule.tenant:  # an extension attribute: whose schedule sent it
        attributes["tenant"] = schedule.tenant
    return CloudEvent(attributes, data)


def signature(secrets: tuple[str, ...], message_id: str, at: datetime, body: bytes) -> str:
    """``webhook-signature``: one ``v1,<base64>`` per secret, space-separated."""
    return " ".join(Webhook(secret).sign(message_id, at, body) for secret in secrets)


def build(occurrence: Occurrence, endpoint: Endpoint, now: datetime) -> Message:
    """The request body and headers of one delivery of ``occurrence`` to ``endpoint``."""
    structured = to_structured(event(occurrence), FORMAT)
    message_id = str(occurrence.pk)
    headers = {
        **{name.lower(): value for name, value in structured.headers.items()},
        "user-agent": USER_AGENT,
        "webhook-id": message_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature(endpoint.secrets, message_id, now, structured.body),
        **tracing.occurrence_headers(message_id),
    }
    return Message(structured.body, headers)
