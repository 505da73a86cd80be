"""A real beat and a real worker under ``opentelemetry-instrument`` with the console exporter,
and the spans they printed (for tests/acceptance/test_observability_traces.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.acceptance.e2e import REPO_ROOT, database_url

INSTRUMENT = shutil.which("opentelemetry-instrument") or str(
    Path(sys.executable).with_name("opentelemetry-instrument")
)


@dataclass
class Traced:
    """One instrumented process: its span output (stdout) and its log (stderr)."""

    name: str
    process: subprocess.Popen[bytes]
    spans_path: Path
    log_path: Path

    def spans(self) -> list[dict[str, Any]]:
        return parse_spans(self.spans_path.read_text(errors="replace"))

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start(
    name: str, args: list[str], directory: Path, redis_url: str, env: dict[str, str]
) -> Traced:
    """``opentelemetry-instrument celery -A project <args>``, console exporter, spans
    exported every 200 ms."""
    environment = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": redis_url,
        "PROJECT_VAR_DIR": str(directory / "var"),
        "PYTHONUNBUFFERED": "1",
        "OTEL_SERVICE_NAME": name,
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_BSP_SCHEDULE_DELAY": "200",
        **env,
    }
    spans_path = directory / f"{name}-spans.json"
    log_path = directory / f"{name}.log"
    with spans_path.open("wb") as spans, log_path.open("wb") as log:
        process = subprocess.Popen(
            [INSTRUMENT, sys.executable, "-m", "celery", "-A", "project", *args],
            cwd=REPO_ROOT,
            env=environment,
            stdout=spans,
            stderr=log,
        )
    return Traced(name, process, spans_path, log_path)


def parse_spans(text: str) -> list[dict[str, Any]]:
    """The JSON objects the console exporter printed, one after the other."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    index = text.find("{")
    while index != -1:
        try:
            value, end = decoder.raw_decode(text, index)
        except ValueError:  # a line that is not a span (or one still being written)
            index = text.find("\n{", index + 1)
            index = index + 1 if index != -1 else -1
            continue
        if isinstance(value, dict) and "context" in value:
            found.append(value)
        index = text.find("{", end)
    return found


def trace_id(span: dict[str, Any]) -> int:
    return int(span["context"]["trace_id"], 16)


def occurrence_ids(spans: list[dict[str, Any]]) -> dict[str, set[int]]:
    """occurrence id -> the trace ids of the spans that carry it."""
    seen: dict[str, set[int]] = {}
    for span in spans:
        occurrence = (span.get("attributes") or {}).get("scheduler.occurrence_id")
        if occurrence:
            seen.setdefault(occurrence, set()).add(trace_id(span))
    return seen
