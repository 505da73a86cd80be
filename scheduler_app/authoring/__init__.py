"""Every way a definition comes in: ``@scheduled`` (declarations, options, sync), the
Python API, phrases, schedule.v1 and Celery beat imports (importing), the preview; and the
definition itself (definitions: stored fields to a validated timing)."""
