"""Conditional GETs: an ETag that is the hash of the response body, and `If-None-Match` → 304.

A runtime polling an instance sends the ETag it last saw and gets an empty 304 until something
changed, so waiting for a person costs a hash, not a payload.

The body is rendered once and hashed as sent: the same state renders the same bytes (the
payload is built in a fixed order), and a second, key-sorted serialisation only for the hash
cost as much as the rendering itself.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.http import HttpResponse
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response


def _matches(header: str, tag: str) -> bool:
    if header.strip() == "*":
        return True
    # A weak comparison, as RFC 9110 asks of If-None-Match: W/"x" matches "x".
    candidates = (part.strip().removeprefix("W/") for part in header.split(","))
    return tag in candidates


def conditional_response(request: Request, payload: Any) -> HttpResponse:
    """200 with the payload and its ETag, or 304 with no body when the client has it already.

    The payload is rendered as a `Response` of it would be (the negotiated renderer and media
    type, so `indent` in Accept still applies)."""
    renderer = request.accepted_renderer
    media_type = request.accepted_media_type
    body = renderer.render(payload, media_type, {"request": request})
    if isinstance(body, str):  # a renderer may answer text; the JSON one answers bytes
        body = body.encode(renderer.charset or "utf-8")
    tag = '"' + hashlib.sha256(body).hexdigest() + '"'
    header = request.headers.get("If-None-Match")
    if header and _matches(header, tag):
        return Response(status=status.HTTP_304_NOT_MODIFIED, headers={"ETag": tag})
    charset = renderer.charset
    content_type = f"{renderer.media_type}; charset={charset}" if charset else renderer.media_type
    return HttpResponse(body, content_type=content_type, headers={"ETag": tag})
