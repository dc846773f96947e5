"""Webhooks, the pure parts: event names, the retry schedule, secrets and the address guard.

No Django here: the resolver is passed in, so the guard is tested without a network.
"""

from __future__ import annotations

import base64
import ipaddress
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

# The events a runtime can subscribe to. `webhook.test` is sent only on request, to one
# endpoint, whatever it subscribed to.
INSTANCE_AWAITING_USER = "instance.awaiting_user"
INSTANCE_READY = "instance.ready"
INSTANCE_CANCELLED = "instance.cancelled"
INSTANCE_EXPIRED = "instance.expired"
INSTANCE_EXPIRING = "instance.expiring"
BELIEF_VETOED = "belief.vetoed"
WEBHOOK_TEST = "webhook.test"
EVENT_TYPES: tuple[str, ...] = (
    INSTANCE_AWAITING_USER,
    INSTANCE_READY,
    INSTANCE_CANCELLED,
    INSTANCE_EXPIRED,
    INSTANCE_EXPIRING,
    BELIEF_VETOED,
)

# Seconds to wait before each retry after a failed attempt: 12 retries, 13 attempts, spread
# over about three days (3 d 3 h 43 min); then the delivery is marked failed.
RETRY_SECONDS: tuple[float, ...] = (
    5,
    30,
    2 * 60,
    10 * 60,
    30 * 60,
    3600,
    2 * 3600,
    4 * 3600,
    8 * 3600,
    12 * 3600,
    24 * 3600,
    24 * 3600,
)

SECRET_PREFIX = "whsec_"
RESPONSE_KEEP_BYTES = 1024


def new_secret() -> str:
    """A Standard Webhooks secret: `whsec_` and 32 random bytes in base64."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def new_webhook_id() -> str:
    return "msg_" + secrets.token_hex(16)


def retry_delay(attempts: int, schedule: Sequence[float] = RETRY_SECONDS) -> float | None:
    """Seconds before the next attempt after `attempts` failed ones; None: give up."""
    if attempts < 1 or attempts > len(schedule):
        return None
    return float(schedule[attempts - 1])


class UnsafeDestination(ValueError):
    """The URL may not be posted to; the message says why, for the `url` field."""


@dataclass(frozen=True)
class Destination:
    scheme: str
    host: str
    port: int
    target: str  # path and query, as sent in the request line
    addresses: tuple[str, ...]  # what the host resolved to, all of them checked


Resolver = Callable[[str, int], Sequence[str]]


def is_public(address: str) -> bool:
    """Globally routable: not loopback, private, link-local (cloud metadata lives at
    169.254.169.254 and fd00:ec2::254), shared, reserved, multicast or unspecified."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def check_destination(url: str, resolve: Resolver, *, allow_private: bool) -> Destination:
    """Where a webhook for `url` may be posted, or UnsafeDestination saying why not.

    https only, to addresses that are all public. `allow_private` (development) also admits
    loopback, private and link-local addresses, and plain http for those only. Every address
    the host resolves to is checked: one private answer is enough to refuse.
    """
    if not isinstance(url, str) or not url.strip():
        raise UnsafeDestination("must be an https URL")
    if len(url) > 2000:
        raise UnsafeDestination("must be at most 2000 characters")
    if any(ord(c) < 33 or ord(c) == 127 for c in url):
        raise UnsafeDestination("must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsafeDestination(f"is not a valid URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http"):
        raise UnsafeDestination("must be an https URL")
    if parts.username is not None or parts.password is not None:
        raise UnsafeDestination("must not carry a user name or password")
    host = parts.hostname
    if not host:
        raise UnsafeDestination("must name a host")
    if parts.fragment:
        raise UnsafeDestination("must not have a #fragment")
    port = port or (443 if scheme == "https" else 80)
    try:
        addresses = tuple(resolve(host, port))
    except (OSError, ValueError):  # ValueError: UnicodeError from a name IDNA cannot encode
        raise UnsafeDestination(f"host {host!r} does not resolve") from None
    if not addresses:
        raise UnsafeDestination(f"host {host!r} does not resolve")
    private = [a for a in addresses if not is_public(a)]
    if private and not allow_private:
        raise UnsafeDestination(
            f"host {host!r} resolves to a non-public address ({private[0]}); only public "
            "addresses may receive webhooks"
        )
    if scheme == "http" and not (allow_private and len(private) == len(addresses)):
        raise UnsafeDestination("must be an https URL")
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return Destination(scheme, host, port, target, addresses)
