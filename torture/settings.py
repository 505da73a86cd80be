"""Django settings of the harness's processes: the example project's, tuned for fast faults.

The database and broker URLs come from the environment (the harness's own PostgreSQL and
Redis servers). Leases and timeouts are seconds instead of minutes so that a killed worker
or a lost message is noticed within a scenario.
"""

from project.settings import *  # noqa: F403

CELERY_RESULT_BACKEND = None  # the sink tables are the record; no result rows
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_DEFAULT_QUEUE = "torture"
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 60}
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True

SCHEDULER_MIN_INTERVAL = 1
SCHEDULER_MAX_INTERVAL = 1.0
SCHEDULER_WORKER_LEASE = 6.0
SCHEDULER_RECONCILE_INTERVAL = 2.0
SCHEDULER_DISPATCH_TIMEOUT = 20.0
SCHEDULER_MAX_PUBLISHES = 50
SCHEDULER_RETRY_PUBLISH_GRACE = 5.0
SCHEDULER_SYNC_ON_BEAT_START = False
SCHEDULER_ALLOWED_TASKS = ("torture.*",)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(process)d %(levelname)s %(name)s %(message)s"}
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {"scheduler_app": {"handlers": ["console"], "level": "INFO"}},
}
