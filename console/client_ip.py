"""The client's address, taken through a configured number of trusted proxies.

Behind N proxies that each append to X-Forwarded-For, the last N entries were written by our own
proxies and the N-th from the right is the address the outermost one saw: the client. Anything
further left was sent by the client and proves nothing. With no proxy (the default), the
address is the socket's own, REMOTE_ADDR, and X-Forwarded-For is ignored.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str | None:
    remote = request.META.get("REMOTE_ADDR") or None
    proxies = settings.CONSOLE_TRUSTED_PROXIES
    if proxies <= 0:
        return remote
    forwarded = [
        part.strip()
        for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
        if part.strip()
    ]
    if len(forwarded) < proxies:
        return remote  # not through all of our proxies: only the socket is known
    candidate = forwarded[-proxies]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote
