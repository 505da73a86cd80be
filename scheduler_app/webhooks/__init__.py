"""The event target (docs/events.md): occurrences of ``event:<type>`` schedules delivered as
signed CloudEvents to webhook endpoints by ``manage.py run_event_deliveries``.

- ``publisher``: the outbox's adapter (hands event rows off to the ledger's own queue);
- ``message``: the CloudEvent and its Standard Webhooks signature;
- ``delivery``: rounds of claims, requests and outcomes;
- ``loop``: the delivery process.

Sending needs the ``[events]`` extra (``cloudevents``, ``standardwebhooks``); storing and
validating event schedules does not.
"""

from __future__ import annotations

import importlib.util

from scheduler_app.compat import install_extra

AVAILABLE = all(
    importlib.util.find_spec(name) is not None for name in ("cloudevents", "standardwebhooks")
)
"""Whether the ``[events]`` extra is installed."""
MISSING = "event deliveries need cloudevents and standardwebhooks: " + install_extra("events")
