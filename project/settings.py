"""Settings for the example project, read from the environment.

DATABASE_URL      database (default: SQLite file var/db.sqlite3)
CELERY_BROKER_URL broker (default: kombu's filesystem transport under var/broker, no server needed)
DJANGO_DEBUG      "1" for debug mode
DJANGO_SECRET_KEY secret key (unset: a random key generated once into PROJECT_VAR_DIR/secret_key)
SCHEDULER_WORKER_LEASE seconds a running attempt owns its occurrence (default: the app's, 60)
"""

import os
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
import django

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PROJECT_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)  # the example project keeps its SQLite file here


def _local_secret_key(path: Path) -> str:
    """A random key made on first use and kept in ``path``: this checkout's, known to no one
    else (a key published in the source would let anyone sign sessions for the site)."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    temporary = path.with_name(f"{path.name}.{os.getpid()}")
    temporary.write_text(secrets.token_urlsafe(50))
    temporary.chmod(0o600)
    try:
        os.link(temporary, path)  # atomic: a concurrent process keeps the first key
    except FileExistsError:
        pass
    finally:
        temporary.unlink()
    return path.read_text().strip()


SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or _local_secret_key(VAR_DIR / "secret_key")
DEBUG = os.environ.get("DJANGO_DEBUG", "0") == "1"
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,testserver").split(",")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_celery_results",
    "scheduler_app",
    "project.demo",
]

try:  # the [tasks] extra: django.tasks as the second handoff target (tests use both targets)
    import django_tasks_db  # noqa: F401
except ImportError:
    TASKS: dict[str, dict[str, str]] = {}
else:
    try:  # the django-tasks backport (Django < 6); Django 6 has django.tasks built in
        import django_tasks  # noqa: F401
    except ImportError:
        pass
    else:
        INSTALLED_APPS += ["django_tasks"]
    INSTALLED_APPS += ["django_tasks_db"]
    TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "project.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
WSGI_APPLICATION = "project.wsgi.application"

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
        # Long-running beat and worker processes keep their connection (checked before reuse)
        # instead of reconnecting on every tick.
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "60")),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Beat and worker share the file: take the write lock when a transaction begins and wait
    # for it (up to 20 s). In the default deferred mode a read-then-write transaction fails at
    # once with "database is locked" when the other process writes (system check W001).
    # (The option arrived in Django 5.1; on 4.2 use PostgreSQL for a beat and a worker.)
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 20, "transaction_mode": "IMMEDIATE"}
        if django.VERSION >= (5, 1)
        else {"timeout": 20}
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"

# Celery: every setting below is also readable by celery through the CELERY_ namespace.
# Workers keep their database connection across tasks (Celery's Django fixup closes it around
# every task otherwise: a new connection per task); the task base class still drops one that
# aged out (CONN_MAX_AGE) or died (CONN_HEALTH_CHECKS). docs/tasks.md.
CELERY_DB_REUSE_MAX = 1000
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
_BROKER_DIR = VAR_DIR / "broker"
if CELERY_BROKER_URL.startswith("filesystem"):
    (_BROKER_DIR / "processed").mkdir(parents=True, exist_ok=True)
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        "data_folder_in": str(_BROKER_DIR),
        "data_folder_out": str(_BROKER_DIR),
        "processed_folder": str(_BROKER_DIR / "processed"),
        "control_folder": str(_BROKER_DIR / "control"),  # exchange tables, not ./control
        "store_processed": False,
    }
    if CELERY_BROKER_URL.startswith("filesystem")
    else {}
)
CELERY_RESULT_BACKEND = "django-db"
CELERY_RESULT_EXTENDED = True
# Task results copy each run's kwargs: keep them a week. The beat deletes expired rows daily
# (DurableScheduler.maybe_cleanup_results); the occurrences keep the outcome either way.
CELERY_RESULT_EXPIRES = timedelta(days=7)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BEAT_SCHEDULER = "scheduler_app.beat:DurableScheduler"
CELERY_TIMEZONE = "UTC"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

if os.environ.get("SCHEDULER_WORKER_LEASE"):
    # The end-to-end tests kill a worker and want its lease to run out in seconds.
    SCHEDULER_WORKER_LEASE = float(os.environ["SCHEDULER_WORKER_LEASE"])
if os.environ.get("SCHEDULER_WORKER_METRICS_PORT"):
    # A worker's own /metrics (the sum over its prefork pool); the acceptance tests scrape it.
    SCHEDULER_WORKER_METRICS_PORT = int(os.environ["SCHEDULER_WORKER_METRICS_PORT"])

# One handler, on the root logger: scheduler_app's records propagate to it once. Celery's
# worker and beat replace the root handlers with their own (worker_hijack_root_logger), so
# there too each line is printed once. SCHEDULER_LOG_FORMAT=json writes JSON lines instead.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "[%(asctime)s: %(levelname)s/%(name)s] %(message)s"},
        "json": {"()": "scheduler_app.observability.logs.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if os.environ.get("SCHEDULER_LOG_FORMAT") == "json" else "plain",
        }
    },
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {"scheduler_app": {"level": "INFO"}},
}
