"""The beat the harness runs: ``DurableScheduler`` with the injected clock, nothing else changed.

``celery -A project beat -S torture.beat:TortureScheduler``
"""

from __future__ import annotations

from scheduler_app.beat import DurableScheduler
from scheduler_app.publishing import CeleryPublisher
from scheduler_app.ticker import Ticker
from torture.clock import harness_clock


class TortureScheduler(DurableScheduler):
    @property
    def ticker(self) -> Ticker:
        if self._ticker is None:
            clock = harness_clock()
            self._ticker = Ticker(CeleryPublisher(self.app, clock=clock), clock=clock)
        return self._ticker
