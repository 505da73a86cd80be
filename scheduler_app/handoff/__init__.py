"""Where an occurrence goes: the target router, the allowlist of schedulable tasks, job
types. The adapters live in ``publishing`` (Celery) and ``djtasks`` (django.tasks)."""
