from django.apps import AppConfig

from scheduler_app import compat

compat.install()  # before the models and migrations are imported: Django 4.2 support


class SchedulerAppConfig(AppConfig):
    name = "scheduler_app"
    verbose_name = "Scheduler"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, once the models are loaded: these modules sit on top of the package
        # (they use the models and the services) and act by registering themselves.
        from scheduler_app import (  # noqa: F401 - registers the system checks, the Celery signals
            checks,
            signals,
        )
        from scheduler_app.checks import observability as observability_checks  # noqa: F401
        from scheduler_app.djtasks import worker as djtasks_worker
        from scheduler_app.monitoring import (  # noqa: F401 - workers: the worker's metrics
            receivers,
            workers,
        )
        from scheduler_app.observability import logs

        # Every process that loads the app (web, beat, worker) counts metrics, pauses after
        # failures and archives finished one-time schedules.
        receivers.connect()
        # django.tasks as a handoff target (when installed): claim and record around its jobs.
        djtasks_worker.connect()
        # Log lines carry their ids and counts in the message, whatever formatter prints them.
        logs.install()
