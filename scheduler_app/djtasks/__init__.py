"""django.tasks as the second handoff target (Django 6's ``django.tasks`` or the ``django-tasks``
backport, with django-tasks-db's ``DatabaseBackend``).

- ``compat``: the only module that imports django.tasks (guarded: absent packages leave
  ``AVAILABLE`` false and everything else here inert);
- ``registry``: which django.tasks ``Task`` a schedule names, and the ones ``@scheduled`` marked;
- ``publisher``: the outbox adapter: enqueue in the transaction that marks the occurrence
  dispatched (a transactional outbox), ``run_after`` from jitter and retries;
- ``worker``: the ``task_started`` / ``task_finished`` receivers that claim the occurrence,
  refuse duplicates before the body, expose the context and record the outcome;
- ``scheduler``: the loop behind ``manage.py run_scheduler``.
"""
