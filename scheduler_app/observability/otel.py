"""The OpenTelemetry API, when it is installed (the ``otel`` extra); ``api`` is None otherwise.

Only the API: the SDK (exporters, samplers, processors) is the user's choice. Nothing else in
the package imports ``opentelemetry``, so without it nothing that is not installed is imported.
"""

from __future__ import annotations

from typing import Any

api: Any
propagator: Any
try:
    import opentelemetry.trace as api
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    propagator = TraceContextTextMapPropagator()
except ImportError:  # pragma: no cover - depends on the installed extras
    api = None
    propagator = None


def configured() -> bool:
    """Whether a tracer provider (an SDK) is configured in this process.

    The API alone answers with its proxy (or no-op) provider: then the scheduler starts no span
    and adds no header, so that tracing costs nothing until someone collects it."""
    if api is None:
        return False
    return not isinstance(
        api.get_tracer_provider(), api.ProxyTracerProvider | api.NoOpTracerProvider
    )
