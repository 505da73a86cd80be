"""A scheduler process for the multi-process concurrency test (not a test module).

    python -m tests.integration.concurrent_ticker NOW OWNER START_FILE

Sets Django up on ``$DATABASE_URL``, prints ``ready``, waits until START_FILE exists (so that
all processes tick at once), runs one tick at the fixed instant NOW through ``CeleryPublisher``
over a recording app, and prints the publications as JSON.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path


def main(now: str, owner: str, start_file: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    import django

    django.setup()
    from django.db import connection

    from scheduler_app.clock import FakeClock
    from scheduler_app.conf import SchedulerSettings
    from scheduler_app.publishing import CeleryPublisher
    from scheduler_app.ticker import Ticker
    from tests.integration.test_concurrency_pg import RecordingApp

    app = RecordingApp()
    ticker = Ticker(
        CeleryPublisher(app),  # type: ignore[arg-type]
        clock=FakeClock(datetime.fromisoformat(now)),
        settings=SchedulerSettings(BATCH_SIZE=50, PUBLISH_LEASE=3600),
        owner=owner,
    )
    connection.ensure_connection()
    print("ready", flush=True)
    deadline = time.monotonic() + 60
    while not Path(start_file).exists():
        if time.monotonic() > deadline:
            raise SystemExit("no start signal")
        time.sleep(0.005)
    result = ticker.tick()
    connection.close()
    print(json.dumps({"created": result.created, "sent": app.sent}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
