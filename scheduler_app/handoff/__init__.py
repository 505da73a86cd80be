"""Where an occurrence goes: the protocol every target speaks, the target router, the allowlist
of schedulable tasks (Celery's, and django.tasks' found by ``djtasks_registry`` through
``djtasks_compat``, the only module that imports django.tasks), and the events' endpoints. The
adapters live above: ``publishing`` (Celery), ``djtasks`` (django.tasks), ``webhooks``."""
