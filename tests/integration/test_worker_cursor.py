"""``db.cursors.fetch_one``, the worker's claim and outcome cursor (issue 39: the worker's Python
per delivery): it looks the connection up once per statement, and that is the calling
thread's own connection."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection

from scheduler_app.db.cursors import fetch_one, statement

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.mark.django_db(transaction=True)
def test_fetch_one_runs_on_the_calling_threads_connection() -> None:
    sql = statement("SELECT pg_backend_pid()")
    mine = fetch_one(sql, {})
    theirs: list[Any] = []

    def other() -> None:
        try:
            theirs.append(fetch_one(sql, {}))
        finally:
            connection.close()

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert mine is not None and theirs and theirs[0] is not None
    assert theirs[0] != mine
    assert fetch_one(sql, {}) == mine
