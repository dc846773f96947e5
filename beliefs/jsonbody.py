"""A JSON body, read once: the key the edge guard leaves the parsed body under, and the API's
one body parser, which takes it from there.

The edge guard (`console.middleware.InputGuardMiddleware`) parses a JSON body before anything
else reads it, refuses what cannot be stored, and leaves the parsed value on the request under
`PARSED_JSON`; this parser hands that value to DRF instead of parsing the body a second time.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.parsers import JSONParser

PARSED_JSON = "guarded_json_body"


class GuardedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        request = (parser_context or {}).get("request")
        django_request = getattr(request, "_request", None)
        if django_request is not None and hasattr(django_request, PARSED_JSON):
            return getattr(django_request, PARSED_JSON)
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - nested too deeply.") from None
