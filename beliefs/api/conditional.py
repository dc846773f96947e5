"""Conditional GETs: an ETag that is the hash of the response body, and `If-None-Match` → 304.

A runtime polling an instance sends the ETag it last saw and gets an empty 304 until something
changed, so waiting for a person costs a hash, not a payload.

The body is rendered once and hashed as sent: the same state renders the same bytes (the
payload is built in a fixed order), and a second, key-sorted serialisation only for the hash
cost as much as the rendering itself.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from django.http import HttpResponse
from rest_framework import status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response


def _matches(header: str, tag: str) -> bool:
    if header.strip() == "*":
        return True
    # A weak comparison, as RFC 9110 asks of If-None-Match: W/"x" matches "x".
    candidates = (part.strip().removeprefix("W/") for part in header.split(","))
    return tag in candidates


def _render(request: Request, payload: Mapping[str, Any], encoded: Mapping[str, str]) -> bytes:
    """The payload as a `Response` of it would render it (the negotiated renderer and media
    type, so `indent` in Accept still applies).

    `encoded`: members of the payload whose canonical JSON (`canonical_json`) is already at
    hand, the last members of the payload. Where the rendering is compact JSON, as it is unless
    a client asks for an indent, their text is written as it is instead of encoding them
    again: JSON's meaning does not depend on the order of an object's keys."""
    renderer = request.accepted_renderer
    media_type = request.accepted_media_type
    context = {"request": request}
    keys = list(payload)
    if (
        encoded
        and isinstance(renderer, JSONRenderer)
        and renderer.compact
        and not renderer.ensure_ascii
        and renderer.get_indent(media_type, context) is None
        and len(keys) > len(encoded)
        and keys[-len(encoded) :] == list(encoded)
    ):
        head = renderer.render({k: payload[k] for k in keys[: -len(encoded)]})
        members = "".join(f",{json.dumps(key)}:{text}" for key, text in encoded.items())
        # As the renderer writes every text: JSON that is also JavaScript.
        members = members.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
        return head[:-1] + members.encode() + b"}"
    body = renderer.render(payload, media_type, context)
    if isinstance(body, str):  # a renderer may answer text; the JSON one answers bytes
        body = body.encode(renderer.charset or "utf-8")
    return body


def _content_type(request: Request) -> str:
    renderer = request.accepted_renderer
    charset = renderer.charset
    return f"{renderer.media_type}; charset={charset}" if charset else renderer.media_type


def json_response(
    request: Request, payload: Mapping[str, Any], encoded: Mapping[str, str] | None = None
) -> HttpResponse:
    """200 with the payload, rendered as a `Response` of it would be (see `_render` for
    `encoded`)."""
    body = _render(request, payload, encoded or {})
    return HttpResponse(body, content_type=_content_type(request))


def conditional_response(request: Request, payload: Any) -> HttpResponse:
    """200 with the payload and its ETag, or 304 with no body when the client has it already.

    The payload is rendered as a `Response` of it would be (the negotiated renderer and media
    type, so `indent` in Accept still applies)."""
    body = _render(request, payload, {})
    tag = '"' + hashlib.sha256(body).hexdigest() + '"'
    header = request.headers.get("If-None-Match")
    if header and _matches(header, tag):
        return Response(status=status.HTTP_304_NOT_MODIFIED, headers={"ETag": tag})
    return HttpResponse(body, content_type=_content_type(request), headers={"ETag": tag})
