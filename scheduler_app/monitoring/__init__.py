"""Operations: the expected-run monitor, beat heartbeats, health, clock skew and metrics.

The receivers of the scheduler's signals (``receivers``: metrics, pause after failures, archive
on completion) are connected by ``SchedulerAppConfig.ready()``; importing this package does
nothing, so any layer may import one of its modules without pulling in the others.
"""
