"""W3C Trace Context: the `traceparent` a request came with (or a fresh one), carried into what
it causes. A runtime that sends `traceparent` with its calls finds the same trace id on the
webhooks they cause (a new parent id per hop, as the specification asks) and in the console's
JSON log lines. When OpenTelemetry is on (`console.telemetry`), the hops are its spans."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

from opentelemetry import trace as otel
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import AttributeValue

_TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
_current: ContextVar[str | None] = ContextVar("traceparent", default=None)
# Where spans go when OpenTelemetry is on (None: off; see console.telemetry).
_provider: otel.TracerProvider | None = None


def use_provider(provider: otel.TracerProvider | None) -> None:
    """Record spans into `provider` from now on (None: record none)."""
    global _provider
    _provider = provider


def parse(header: str | None) -> str | None:
    """The header when it is a valid version-00 traceparent (all-zero ids are invalid); else
    None."""
    match = _TRACEPARENT.match((header or "").strip().lower())
    if match is None or set(match[1]) == {"0"} or set(match[2]) == {"0"}:
        return None
    return match[0]


def fresh() -> str:
    """A new trace, sampled."""
    return f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"


def child(traceparent: str) -> str:
    """The traceparent of the next hop: the same trace and flags, a new parent id."""
    _, trace, _, flags = traceparent.split("-")
    return f"00-{trace}-{secrets.token_hex(8)}-{flags}"


def current() -> str | None:
    """The traceparent of what runs now (a request, a delivery), if any."""
    return _current.get()


def trace_id() -> str | None:
    traceparent = _current.get()
    return traceparent.split("-")[1] if traceparent else None


@contextmanager
def continued(traceparent: str | None) -> Iterator[str | None]:
    """Run the block in `traceparent`'s trace (None: in none)."""
    token = _current.set(traceparent)
    try:
        yield traceparent
    finally:
        _current.reset(token)


def of_current_span() -> str | None:
    """The traceparent of OpenTelemetry's current span (a request's, when Django is
    instrumented), or None when there is none."""
    context = otel.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def annotate(attributes: Mapping[str, AttributeValue]) -> None:
    """Add to the current span what was learnt while it ran (nothing when tracing is off)."""
    otel.get_current_span().set_attributes(attributes)


@contextmanager
def span(
    name: str,
    parent: str | None,
    attributes: Mapping[str, AttributeValue] | None = None,
    kind: SpanKind = SpanKind.INTERNAL,
) -> Iterator[str | None]:
    """Run the block as the next hop of `parent`'s trace, and yield that hop's traceparent:
    with OpenTelemetry on, a span named `name` (a root span when there is no parent); off, a new
    parent id in the same trace (None without a parent)."""
    if _provider is None:
        hop = child(parent) if parent else None
        with continued(hop):
            yield hop
        return
    context = TraceContextTextMapPropagator().extract({"traceparent": parent}) if parent else None
    tracer = _provider.get_tracer("beliefs")
    with tracer.start_as_current_span(name, context=context, kind=kind, attributes=attributes):
        hop = of_current_span()
        with continued(hop):
            yield hop
