"""Settings for ``make bench``: the example project's, plus django-celery-beat (bench only).

The benchmark runs against its own PostgreSQL database and Redis db number (see the Makefile),
never against the test databases.
"""

import os

from project.settings import *  # noqa: F403
from project.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "django_celery_beat"]

# The bench's schedules target a task no worker runs; messages only pile up in the bench queue.
SCHEDULER_VALIDATE_TASK_NAMES = False
# The @scheduled declarations of the example project stay out of the bench database.
SCHEDULER_SYNC_ON_BEAT_START = False
DJANGO_CELERY_BEAT_TZ_AWARE = True
# The bench's scheduled no-op tasks (bench.scale.env, bench.djtasks_tasks): allowed by name, since
# the bench process that creates the schedules does not import them through the app. Only
# those: a pattern such as "bench.*" also takes in the plain Celery task the worker figure
# measures against (``bench.plain_noop``), and the worker's check E001 then refuses to start.
SCHEDULER_ALLOWED_TASKS = ["bench.noop", "bench.djtasks_tasks.noop"]
# The bench's own queue: on a RabbitMQ shared with other work it never touches theirs.
CELERY_TASK_DEFAULT_QUEUE = "bench"
if os.environ.get("CELERY_BROKER_URL", "").startswith("amqp"):
    # `python -m bench.scale --broker amqp`: "published" means the broker has confirmed it.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"confirm_publish": True}
# `celery beat -S redbeat.RedBeatScheduler` (the real-beat burst): its entries in the bench's
# Redis db, also when the messages go to RabbitMQ.
CELERY_REDBEAT_REDIS_URL = os.environ.get("BENCH_REDIS_URL") or os.environ.get(
    "CELERY_BROKER_URL", ""
)
CELERY_REDBEAT_KEY_PREFIX = "redbeat:"
CELERY_REDBEAT_REDIS_OPTIONS: dict[str, object] = {}
# PostgreSQL settings are the example project's: the worker's and the beat's own statements
# are prepared and planned once by the product itself (SCHEDULER_PREPARED_STATEMENTS), and the
# workers keep their connection across tasks (CELERY_DB_REUSE_MAX in project/settings.py).
