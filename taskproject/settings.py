"""Settings of the Celery-free example project (docs/django-tasks.md): no Celery app module, no
``CELERY_*`` setting, no broker.

DATABASE_URL      database (default: SQLite file under PROJECT_VAR_DIR, default var/taskproject)
SCHEDULER_WORKER_LEASE seconds a running attempt owns its occurrence (tests shorten it)
SCHEDULER_PING_ALLOWED_HOSTS comma-separated hosts a schedule's ping_url may reach privately
"""

import os
import secrets
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PROJECT_VAR_DIR", BASE_DIR / "var" / "taskproject"))
VAR_DIR.mkdir(parents=True, exist_ok=True)

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or secrets.token_urlsafe(50)
DEBUG = False
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "testserver"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django_tasks_db",
    "scheduler_app",
    "taskproject",
]
try:  # the django-tasks backport (Django 5.2); Django 6 has django.tasks built in
    import django_tasks  # noqa: F401
except ImportError:
    pass
else:
    INSTALLED_APPS.insert(INSTALLED_APPS.index("django_tasks_db"), "django_tasks")
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "taskproject.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
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
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
        conn_max_age=60,
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # run_scheduler and db_worker share the file: take the write lock at BEGIN and wait for it.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 20, "transaction_mode": "IMMEDIATE"}
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
STATIC_URL = "static/"

if os.environ.get("SCHEDULER_WORKER_LEASE"):
    SCHEDULER_WORKER_LEASE = float(os.environ["SCHEDULER_WORKER_LEASE"])
if os.environ.get("SCHEDULER_PING_ALLOWED_HOSTS"):  # a local ping server (the tests')
    SCHEDULER_PING_ALLOWED_HOSTS = tuple(os.environ["SCHEDULER_PING_ALLOWED_HOSTS"].split(","))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "scheduler_app": {"level": "INFO"},
        "django_tasks": {"level": "INFO"},
        "django.tasks": {"level": "INFO"},
    },
}
