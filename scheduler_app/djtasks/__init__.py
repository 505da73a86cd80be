"""django.tasks as the second handoff target (Django 6's ``django.tasks`` or the ``django-tasks``
backport, with django-tasks-db's ``DatabaseBackend``).

- ``publisher``: the outbox adapter: enqueue in the transaction that marks the occurrence
  dispatched (a transactional outbox), ``run_after`` from jitter and retries;
- ``worker``: the ``task_started`` / ``task_finished`` receivers that claim the occurrence,
  refuse duplicates before the body, expose the context and record the outcome;
- ``results``, ``outcome``, ``giveback``, ``errors``: the result rows, the outcome read from
  them, a delivery given back, the errors raised.

Below them, in ``scheduler_app.handoff`` beside the allowlist that reads them: ``djtasks_compat``,
the only module that imports django.tasks (guarded: absent packages leave ``AVAILABLE`` false
and everything here inert), and ``djtasks_registry``, which ``Task`` a schedule names and the
ones ``@scheduled`` marked. Above them, beside ``beat``: ``scheduler_app.loop``, the loop behind
``manage.py run_scheduler``.
"""
