"""Traces through OpenTelemetry: a span for each request (Django), each database statement
(psycopg) and each webhook sent (the delivery's own client span, `beliefs.tracing.span`: the
webhooks go through urllib3's connections, not its pools, so urllib3's instrumentation would
see nothing), exported over OTLP.

Off unless configured: with neither `OTEL_EXPORTER_OTLP_ENDPOINT` nor
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` set (or with `OTEL_SDK_DISABLED=true`) nothing is
instrumented and nothing is sent. The exporter reads the standard `OTEL_EXPORTER_OTLP_*`
variables (headers, timeout, compression); the service is `OTEL_SERVICE_NAME`, by default
`confirmation-console`. Without the SDK the `traceparent` an agent sends is still carried into
the webhooks it causes and into the JSON log lines (`beliefs.tracing`).
"""

from __future__ import annotations

import os

from opentelemetry import trace
from opentelemetry.instrumentation.django import DjangoInstrumentor
from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from beliefs import tracing

SERVICE = "confirmation-console"
# The readiness and metrics scrapes would be most of the spans and tell nothing.
EXCLUDED_URLS = "healthz,readyz,metrics"


def enabled_by_environment() -> bool:
    """Is an OTLP endpoint configured (and the SDK not disabled)?"""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(
        os.environ.get(name, "").strip()
        for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def configure_from_environment() -> TracerProvider | None:
    """Traces exported over OTLP when the environment asks for them (see the module); the
    provider, or None when tracing is off. Called once a process, as Django starts."""
    if not enabled_by_environment():
        return None
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    provider = provider_with(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    instrument(provider)
    return provider


def provider_with(processor: SpanProcessor) -> TracerProvider:
    """A tracer provider for this service that hands its spans to `processor`."""
    name = os.environ.get("OTEL_SERVICE_NAME", "").strip() or SERVICE
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
    provider.add_span_processor(processor)
    return provider


def instrument(provider: TracerProvider) -> None:
    """Django's requests, psycopg's statements and the webhooks sent, traced into `provider`.
    Django's part takes effect for the handlers made after it (a server's, at start), psycopg's
    for the connections opened after it."""
    DjangoInstrumentor().instrument(tracer_provider=provider, excluded_urls=EXCLUDED_URLS)
    PsycopgInstrumentor().instrument(tracer_provider=provider, skip_dep_check=True)
    tracing.use_provider(provider)


def uninstrument() -> None:
    """Undo `instrument` (for tests)."""
    DjangoInstrumentor().uninstrument()
    PsycopgInstrumentor().uninstrument()
    tracing.use_provider(None)
