"""The no-op django.tasks task of the django.tasks burst (``bench.djtasks_burst``)."""

from django_tasks import task


@task()
def noop(**kwargs: object) -> None:
    """Does nothing: the burst measures the scheduler's handoff, not the work."""
