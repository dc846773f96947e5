"""Conditional GETs: an ETag that is the hash of the response body, and `If-None-Match` → 304.

A runtime polling an instance sends the ETag it last saw and gets an empty 304 until something
changed, so waiting for a person costs a hash, not a payload.
"""

from __future__ import annotations

import hashlib
from typing import Any

from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from beliefs.domain.canonical import canonical_json


def etag(payload: Any) -> str:
    return '"' + hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest() + '"'


def _matches(header: str, tag: str) -> bool:
    if header.strip() == "*":
        return True
    # A weak comparison, as RFC 9110 asks of If-None-Match: W/"x" matches "x".
    candidates = (part.strip().removeprefix("W/") for part in header.split(","))
    return tag in candidates


def conditional_response(request: Request, payload: Any) -> Response:
    """200 with the payload and its ETag, or 304 with no body when the client has it already."""
    tag = etag(payload)
    header = request.headers.get("If-None-Match")
    if header and _matches(header, tag):
        return Response(status=status.HTTP_304_NOT_MODIFIED, headers={"ETag": tag})
    return Response(payload, headers={"ETag": tag})
