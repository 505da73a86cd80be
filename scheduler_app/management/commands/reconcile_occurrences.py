"""``manage.py reconcile_occurrences``: one reconciler pass now (the beat also runs it)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand

from scheduler_app.clock import SystemClock
from scheduler_app.conf import get_settings
from scheduler_app.dispatch.reconcile import reconcile


class Command(BaseCommand):
    help = (
        "Move stuck occurrences on: lost workers (retry or failed: lost), passed deadlines "
        "(expired), lost retry messages (republished), cancel_previous grace periods."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        report = reconcile(
            SystemClock().now(),
            retry_grace=timedelta(seconds=get_settings().RETRY_PUBLISH_GRACE),
        )
        self.stdout.write(
            f"lost: {report.lost}, requeued: {report.requeued}, expired: {report.expired}, "
            f"republished: {report.republished}, released: {report.released}"
        )
