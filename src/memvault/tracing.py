"""OpenTelemetry spans for requests, write and recall stages and job runs: off by default, and
then a no-op that imports nothing from the OpenTelemetry SDK.

    with tracing.span("memvault.ingest.embed", texts=3) as stage:
        ...
        stage.set(model_calls=1)

Attributes are counts, sizes, kinds, durations and status codes, named ``memvault.<key>``:
never content, user ids, queries, entity names or keys (``tests/test_tracing.py`` adds
hostile markers everywhere and scans every exported span for them). The tenant is left out
too: it is a customer's identifier, and a trace backend is usually shared wider than the store.

memvault keeps a tracer provider of its own rather than the process's global one: FastAPI and
the MCP SDK trace themselves through the global provider, and FastAPI's spans carry the raw
path and query string (user ids, filters). ``configure`` builds that provider from
``MEMVAULT_TRACING`` and the standard ``OTEL_*`` variables; a host application that has set up
OpenTelemetry itself hands memvault its provider with ``install``.
"""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any

from memvault.config import TracingMode
from memvault.errors import ConfigurationError

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer, TracerProvider

Attribute = int | float | bool | str
EXTRA = "otel"
_SCOPE = "memvault"


class _Live:
    """The tracer and the few OpenTelemetry calls the hot path makes, bound once."""

    def __init__(self, provider: TracerProvider, *, owned: bool) -> None:
        from opentelemetry import context, propagate, trace

        self.provider = provider
        self.owned = owned  # built by configure(): memvault shuts it down
        self.tracer: Tracer = provider.get_tracer(_SCOPE)
        self.attach = context.attach
        self.detach = context.detach
        self.in_context = trace.set_span_in_context
        self.current = trace.get_current_span
        self.extract = propagate.extract
        self.server = trace.SpanKind.SERVER
        self.error = trace.Status(trace.StatusCode.ERROR)


_live: _Live | None = None


def enabled() -> bool:
    return _live is not None


# --- turning it on and off --------------------------------------------------------------------


def configure(mode: TracingMode) -> None:
    """Set up tracing for this process as ``MEMVAULT_TRACING`` says (once: a process has one
    exporter). The standard ``OTEL_SDK_DISABLED=true`` wins over the mode. The exporter,
    sampler, resource and batching read their own ``OTEL_*`` variables, as the SDK does."""
    disabled = os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"
    if mode == "off" or disabled or (_live is not None and _live.owned):
        return
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        raise ConfigurationError(
            f"MEMVAULT_TRACING={mode} needs the OpenTelemetry packages: "
            f"pip install 'memvault[{EXTRA}]', or set MEMVAULT_TRACING=off.",
            details={"setting": "tracing", "extra": EXTRA},
        ) from None
    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        # OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) wins when given.
        resource = resource.merge(Resource({"service.name": "memvault"}))
    provider = TracerProvider(resource=resource)  # the sampler: OTEL_TRACES_SAMPLER
    provider.add_span_processor(BatchSpanProcessor(_exporter(mode, ConsoleSpanExporter)))
    _install(provider, owned=True)


def _exporter(mode: TracingMode, console: Any) -> Any:
    if mode == "console":
        # Today's stdout (the class's default is the one it saw at import).
        return console(out=sys.stdout)
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        raise ConfigurationError(
            "MEMVAULT_TRACING=otlp needs the OTLP exporter: pip install 'memvault[otel]'.",
            details={"setting": "tracing", "extra": EXTRA},
        ) from None
    # Endpoint, headers, timeout, compression: OTEL_EXPORTER_OTLP_(TRACES_)* variables.
    return OTLPSpanExporter()


def install(provider: TracerProvider) -> None:
    """Record memvault's spans through ``provider``: a host application's own (often
    ``opentelemetry.trace.get_tracer_provider()``), or a test's in-memory one."""
    _install(provider, owned=False)


def _install(provider: TracerProvider, *, owned: bool) -> None:
    global _live
    _live = _Live(provider, owned=owned)


def uninstall() -> None:
    """Stop recording spans; a provider ``configure`` built is flushed and shut down."""
    global _live
    live, _live = _live, None
    if live is not None and live.owned:
        shutdown = getattr(live.provider, "shutdown", None)
        if shutdown is not None:
            shutdown()


# --- spans ------------------------------------------------------------------------------------


class Stage:
    """An open span; ``set`` adds attributes known once the work is done (counts)."""

    __slots__ = ("_span", "_token")

    def __init__(self, name: str, attributes: dict[str, Attribute]) -> None:
        live = _live
        assert live is not None
        self._span: Span = live.tracer.start_span(name, attributes=_named(attributes))
        self._token: object = None

    def set(self, **attributes: Attribute) -> None:
        self._span.set_attributes(_named(attributes))

    def __enter__(self) -> Stage:
        live = _live
        if live is not None:
            self._token = live.attach(live.in_context(self._span))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None:
            _failed(self._span, exc)
        self._span.end()
        live = _live
        if live is not None and self._token is not None:
            live.detach(self._token)  # type: ignore[arg-type]


class Off:
    """What ``span`` returns while tracing is off: one shared object, nothing recorded."""

    __slots__ = ()

    def set(self, **attributes: Attribute) -> None:
        pass

    def __enter__(self) -> Off:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def finish(self, route: str, status: int, response_bytes: int) -> None:
        pass

    def close(self) -> None:
        pass


OFF = Off()


def span(name: str, **attributes: Attribute) -> Stage | Off:
    """A span around a block (``with``), child of the span current here. The names of
    ``attributes`` are prefixed ``memvault.``; their values must say nothing a user wrote."""
    if _live is None:
        return OFF
    return Stage(name, attributes)


def record(name: str, seconds: float, **attributes: Attribute) -> None:
    """A span for work that just finished and took ``seconds``: what a stage clock that
    already measures its laps (retrieval/search.py) reports without a second timer."""
    live = _live
    if live is None:
        return
    ended = time.time_ns()
    done = live.tracer.start_span(
        name, start_time=ended - int(seconds * 1e9), attributes=_named(attributes)
    )
    done.end(end_time=ended)


def _named(attributes: dict[str, Attribute]) -> dict[str, Attribute]:
    return {f"memvault.{key}": value for key, value in attributes.items()}


def _failed(span: Span, exc: BaseException) -> None:
    # The exception's class and machine code only: its message can quote the input, so the
    # SDK's record_exception (message and traceback as an event) is never used.
    live = _live
    span.set_attribute("error.type", type(exc).__name__)
    code = getattr(exc, "code", None)
    if isinstance(code, str):
        span.set_attribute("memvault.error_code", code)
    if live is not None:
        span.set_status(live.error)


# --- HTTP requests ----------------------------------------------------------------------------


class Request:
    """The server span of one HTTP request, current while the handler runs. Named by the
    route template once routing has found it (``POST /v1/memories/{memory_id}``), never by
    the path, which holds ids."""

    __slots__ = ("_method", "_span", "_token")

    def __init__(self, live: _Live, method: str, headers: list[tuple[bytes, bytes]]) -> None:
        # The caller's trace, when it sent one (W3C traceparent, or what OTEL_PROPAGATORS
        # names): this request's span joins it.
        carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in headers}
        parent: Context = live.extract(carrier)
        self._method = method
        self._span: Span = live.tracer.start_span(
            method, context=parent, kind=live.server, attributes={"http.request.method": method}
        )
        self._token = live.attach(live.in_context(self._span, parent))

    def finish(self, route: str, status: int, response_bytes: int) -> None:
        span = self._span
        span.update_name(f"{self._method} {route}")
        span.set_attributes(
            {
                "http.route": route,
                "http.response.status_code": status,
                "http.response.body.size": response_bytes,
            }
        )
        if status >= 500:
            span.set_attribute("error.type", str(status))
            live = _live
            if live is not None:
                span.set_status(live.error)

    def close(self) -> None:
        self._span.end()
        live = _live
        if live is not None:
            live.detach(self._token)


def request(method: str, headers: list[tuple[bytes, bytes]]) -> Request | Off:
    """Open the span of one HTTP request (the API's outermost middleware calls this)."""
    live = _live
    if live is None:
        return OFF
    return Request(live, method, headers)


# --- log lines --------------------------------------------------------------------------------


def current_ids() -> tuple[str, str] | None:
    """The active span's trace id and span id (hex, as trace backends show them), or None."""
    live = _live
    if live is None:
        return None
    context = live.current().get_span_context()
    if not context.is_valid:
        return None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


__all__ = [
    "OFF",
    "Off",
    "Request",
    "Stage",
    "TracingMode",
    "configure",
    "current_ids",
    "enabled",
    "install",
    "record",
    "request",
    "span",
    "uninstall",
]
