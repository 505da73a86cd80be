"""Every way a definition comes in: ``@scheduled`` (declarations, options, sync), the Python
API, schedule.v1 and Celery beat imports (importing, celery_beat_*), and the preview of what a
definition will do. The definition itself is ``scheduler_app.definition``."""
