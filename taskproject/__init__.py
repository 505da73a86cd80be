"""An example project with no Celery at all: django.tasks (django-tasks-db) as the handoff
target, ``manage.py run_scheduler`` and ``manage.py db_worker`` as its processes."""
