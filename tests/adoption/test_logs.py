"""Readable one-line log messages with Celery's formatter, JSON lines, logging once."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from celery.utils.log import ColorFormatter
from django.conf import settings

from scheduler_app.observability.logs import JsonFormatter, SchedulerLogRecord, install, render

REPO = Path(__file__).resolve().parents[2]


def record(name: str, message: str, **extra: object) -> logging.LogRecord:
    logger = logging.getLogger(name)
    made = logger.makeRecord(name, logging.INFO, __file__, 1, message, (), None, extra=extra)
    return made


def test_known_actions_read_as_sentences() -> None:
    tick = render(
        "tick",
        {"action": "beat.tick", "occurrences_created": 12, "published": 12, "duration_ms": 14},
    )
    assert tick == "tick: 12 occurrence(s) created, 12 published in 14 ms"
    # A field the phrase needs is missing: the pairs, never an error.
    assert render("tick", {"action": "beat.tick", "published": 1}) == "tick: published=1"
    created = render("schedule created", {"action": "schedule.created", "schedule_id": "3f0c"})
    assert created == "schedule created: schedule 3f0c"


def test_other_actions_get_ids_first_then_the_rest() -> None:
    line = render(
        "retrying",
        {"action": "occurrence.retrying", "delay": 4, "occurrence_id": "o1", "attempt": 2},
    )
    assert line == "retrying: occurrence_id=o1 attempt=2 delay=4"
    assert render("plain", {}) == "plain"


def test_scheduler_records_render_their_extras_under_celerys_formatter() -> None:
    install()
    install()  # idempotent: no double rendering
    made = record("scheduler_app.ticker", "reconciled", action="reconcile.done", requeued=3)
    assert isinstance(made, SchedulerLogRecord)
    assert ColorFormatter("%(levelname)s %(message)s", use_color=False).format(made) == (
        "INFO reconciled: 3 requeued"
    )
    other = record("someone.else", "hello", action="x.y", count=1)
    assert type(other) is logging.LogRecord and other.getMessage() == "hello"


def test_the_json_formatter_has_a_stable_action_and_ids_and_never_the_payload() -> None:
    install()
    made = record(
        "scheduler_app.tasks",
        "attempt failed",
        action="occurrence.failed",
        schedule_id="s1",
        occurrence_id="o1",
        attempt=3,
        payload={"password": "hunter2"},
        kwargs={"card": "4111"},
    )
    document = json.loads(JsonFormatter().format(made))
    assert document["action"] == "occurrence.failed"
    assert document["message"] == "attempt failed"  # the bare message: fields stay fields
    assert (document["schedule_id"], document["occurrence_id"], document["attempt"]) == (
        "s1",
        "o1",
        3,
    )
    assert "hunter2" not in json.dumps(document) and "4111" not in json.dumps(document)
    assert list(document)[:5] == ["time", "level", "logger", "action", "message"]


def test_the_example_project_has_one_handler_on_the_root_only() -> None:
    assert "handlers" not in settings.LOGGING["loggers"]["scheduler_app"]
    assert settings.LOGGING["root"]["handlers"] == ["console"]


@pytest.mark.parametrize("fmt", ["plain", "json"])
def test_the_example_project_logs_each_line_once(tmp_path: Path, fmt: str) -> None:
    code = (
        "import logging; logging.getLogger('scheduler_app.demo').info("
        "'schedule created', extra={'action': 'schedule.created', 'schedule_id': 'abc'})"
    )
    env = {**os.environ, "PROJECT_VAR_DIR": str(tmp_path), "SCHEDULER_LOG_FORMAT": fmt}
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = [line for line in done.stderr.splitlines() if "schedule created" in line]
    assert len(lines) == 1, done.stderr
    if fmt == "json":
        assert json.loads(lines[0])["schedule_id"] == "abc"
    else:
        assert lines[0].endswith("schedule created: schedule abc")
