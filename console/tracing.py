"""The request's trace (W3C Trace Context), and log lines as JSON with its id."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest

from beliefs import tracing


class TraceContextMiddleware:
    """Continues the trace a request's `traceparent` names, or starts one, for the request's
    duration: what it causes (a webhook) and what it logs carry the trace id."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    @staticmethod
    def _traceparent(request: HttpRequest) -> str:
        # With OpenTelemetry on, its request span (which continued the header) is the hop.
        given = tracing.parse(request.headers.get("traceparent"))
        return tracing.of_current_span() or (tracing.child(given) if given else tracing.fresh())

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self._acall(request)
        with tracing.continued(self._traceparent(request)):
            return self.get_response(request)

    async def _acall(self, request: HttpRequest) -> Any:
        with tracing.continued(self._traceparent(request)):
            return await self.get_response(request)


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, the trace id, and the traceback
    when there is one (LOG_FORMAT=json)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        trace = tracing.trace_id()
        if trace:
            line["trace_id"] = trace
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)
