"""Settings for ``make bench``: the example project's, plus django-celery-beat (bench only).

The benchmark runs against its own PostgreSQL database and Redis db number (see the Makefile),
never against the test databases.
"""

import os

from project.settings import *  # noqa: F403
from project.settings import DATABASES, INSTALLED_APPS

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
# The worker's claim and outcome statements prepared on the server after 5 uses per connection
# (psycopg 3; Django's queries keep client-side binding and are never prepared). The bench talks
# to PostgreSQL directly; behind PgBouncer see docs/deployment.md before setting it.
# PostgreSQL plans them once (a generic plan) instead of on every run: without
# `plan_cache_mode = force_generic_plan` it keeps planning the claim and the outcome on every
# task, their generic plan costed as if it read every partition (docs/deployment.md).
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = 5
    DATABASES["default"]["OPTIONS"]["options"] = "-c plan_cache_mode=force_generic_plan"
# Workers keep their PostgreSQL connection across tasks (Celery's Django fixup closes it around
# every task otherwise), for the plain task and `OccurrenceTask` alike: docs/tasks.md.
CELERY_DB_REUSE_MAX = 1000
