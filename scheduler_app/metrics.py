"""Moved to ``scheduler_app.monitoring.metrics``; this name stays for existing imports."""

from scheduler_app.monitoring.metrics import SchedulerCollector, build_registry, registry

__all__ = ["SchedulerCollector", "build_registry", "registry"]
