from django.apps import AppConfig

from scheduler_app import compat

compat.install()  # before the models and migrations are imported: Django 4.2 support


class SchedulerAppConfig(AppConfig):
    name = "scheduler_app"
    verbose_name = "Scheduler"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from scheduler_app import (  # noqa: F401 - registers the system checks, connects the signals
            checks,
            logs,
            signals,
        )

        # Log lines carry their ids and counts in the message, whatever formatter prints them.
        logs.install()
