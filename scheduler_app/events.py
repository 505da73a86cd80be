"""Django signals the scheduler sends, for receivers in this app (metrics, failure handling,
the monitor) and in the project (paging, chat).

- ``occurrence_finished(sender=Occurrence, occurrence=, state=, reason=)``: an occurrence reached
  a terminal state (succeeded, failed, expired, skipped, cancelled), sent after the write.
- ``duplicate_prevented(sender=None, kind=, schedule_id=, occurrence_id=)``: a duplicate was
  absorbed; ``kind`` is ``insert_conflict`` (a slot's row existed already) or ``delivery``
  (a worker refused a second delivery).
- ``schedule_unhealthy(sender=Schedule, schedule=, reason=)`` /
  ``schedule_recovered(sender=Schedule, schedule=)``: the expected-run monitor's transitions,
  sent once per transition.
"""

from __future__ import annotations

from django.dispatch import Signal

occurrence_finished = Signal()
duplicate_prevented = Signal()
schedule_unhealthy = Signal()
schedule_recovered = Signal()
