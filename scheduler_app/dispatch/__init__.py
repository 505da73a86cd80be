"""The beat side: which slots are due, their occurrences written (materialize), handed
off through the outbox, and the reconciler that repairs what a crash left. ``tick`` drives
them; ``scheduler_app.beat`` is Celery Beat's entry, ``run_scheduler`` the other one."""
