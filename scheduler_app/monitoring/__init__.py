"""Operations: the expected-run monitor, beat heartbeats, health, clock skew and metrics.

Importing the package connects the receivers of the scheduler's signals (metrics, pause after
failures, archive on completion).
"""

from scheduler_app.monitoring import receivers as receivers
