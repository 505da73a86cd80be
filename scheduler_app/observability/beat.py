"""The beat's own ping: ``SCHEDULER_BEAT_PING_URL`` every ``SCHEDULER_BEAT_PING_EVERY`` ticks.

Sent only after a tick that reached the database, so the external service (Healthchecks.io,
Cronitor, a Sentry monitor by its URL) notices a dead beat *or* an unreachable database, which
the in-database monitor cannot report about itself.
"""

from __future__ import annotations

from scheduler_app.conf import SchedulerSettings
from scheduler_app.observability.pings import ping


class BeatPing:
    def __init__(self, settings: SchedulerSettings) -> None:
        self.url = settings.BEAT_PING_URL
        self.every = max(1, settings.BEAT_PING_EVERY)
        self.ticks = 0

    def ticked(self) -> bool:
        """Count a successful tick; ping on the first and then every ``every``-th one."""
        if not self.url:
            return False
        due = self.ticks % self.every == 0
        self.ticks += 1
        if due:
            ping(self.url, check_address=False)
        return due
