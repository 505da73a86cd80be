"""Shared by the observability tests: an in-memory OpenTelemetry SDK, a publisher that keeps
each message's headers, and a worker-side delivery that carries them."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import opentelemetry.trace as api
import pytest
from celery.result import EagerResult
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from scheduler_app.clock import FakeClock
from scheduler_app.handoff.protocol import HEADER, context_headers
from scheduler_app.models import Occurrence
from scheduler_app.observability import tracing
from scheduler_app.publishing.calls import TaskCall
from tests.integration.support import MemoryPublisher


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[TracerProvider]:
    """An SDK configured in this process for one test (the API's global, put back after)."""
    sdk = TracerProvider()
    monkeypatch.setattr(api, "_TRACER_PROVIDER", sdk)
    yield sdk
    sdk.shutdown()


@pytest.fixture
def exporter(provider: TracerProvider) -> InMemorySpanExporter:
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return memory


class HeaderPublisher(MemoryPublisher):
    """A broker in a list that also keeps the headers each message would carry."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock = clock
        self.headers: dict[str, dict[str, Any]] = {}

    def publish(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        for row in occurrences:
            with tracing.publishing(row):
                self.headers[str(row.pk)] = TaskCall.of(row, self.clock.now()).headers
        return super().publish(occurrences)


def deliver(task: Any, occurrence: Occurrence, clock: FakeClock, headers: dict[str, Any]) -> Any:
    """Run ``task`` for ``occurrence`` in-process with the message's headers."""
    target = task._get_current_object() if hasattr(task, "_get_current_object") else task
    target.clock = clock
    try:
        result: EagerResult = task.apply(
            kwargs=occurrence.kwargs,
            task_id=str(occurrence.id),
            headers={HEADER: context_headers(occurrence), **headers},
        )
    finally:
        del target.clock
    return result


def of_occurrence(spans: Sequence[ReadableSpan], occurrence: Occurrence) -> list[ReadableSpan]:
    """The spans in ``occurrence``'s trace."""
    return [span for span in spans if span.context.trace_id == occurrence.pk.int]


def named(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


class PingServer:
    """A local HTTP server in a thread that records the paths it was asked for; ``hang``
    makes it accept connections and never answer."""

    def __init__(self, *, hang: bool = False) -> None:
        self.paths: list[str] = []
        self.authorization: list[str | None] = []
        self.arrived = threading.Event()
        self.release = threading.Event()
        self.hang = hang
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.paths.append(self.path)
                server.authorization.append(self.headers.get("Authorization"))
                server.arrived.set()
                if server.hang:
                    server.release.wait(30)
                    return
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"OK")

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def ping_server() -> Iterator[PingServer]:
    server = PingServer()
    yield server
    server.close()


@pytest.fixture
def hanging_server() -> Iterator[PingServer]:
    server = PingServer(hang=True)
    yield server
    server.close()


@pytest.fixture
def committed(django_capture_on_commit_callbacks: Any) -> Callable[..., Any]:
    """Run ``call``, then what it left for after the commit (a test's transaction never
    commits: pings and check-ins wait for it)."""

    def run_and_commit(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return call(*args, **kwargs)

    return run_and_commit
