"""Webhooks, the pure parts: event names, the retry schedule, secrets and the address guard.

No Django here: the resolver is passed in, so the guard is tested without a network.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlsplit

from beliefs.domain.vocabulary import MAX_URL_LENGTH


class EventType(StrEnum):
    """The events a runtime can subscribe to (a webhook event's `type`), in the order the API
    lists them. `WEBHOOK_TEST` is not one: it is sent only on request, to one endpoint, whatever
    that endpoint subscribed to."""

    INSTANCE_AWAITING_USER = "instance.awaiting_user"
    INSTANCE_AWAITING_SIGNATURE = "instance.awaiting_signature"
    INSTANCE_READY = "instance.ready"
    INSTANCE_CANCELLED = "instance.cancelled"
    INSTANCE_EXPIRED = "instance.expired"
    INSTANCE_EXPIRING = "instance.expiring"
    BELIEF_VETOED = "belief.vetoed"
    # M-of-N approval: the principal has answered and the group's approvals are due;
    # one more approval arrived and some are still missing.
    INSTANCE_AWAITING_APPROVAL = "instance.awaiting_approval"
    INSTANCE_APPROVAL_RECORDED = "instance.approval_recorded"


WEBHOOK_TEST = "webhook.test"
# The event types as plain strings, to check and list what a request names.
EVENT_TYPES: tuple[str, ...] = tuple(t.value for t in EventType)

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


SECRET_MIN_BYTES, SECRET_MAX_BYTES = 24, 64
SECRET_MESSAGE = (
    f"must be a Standard Webhooks secret: {SECRET_PREFIX} and the base64 of "
    f"{SECRET_MIN_BYTES} to {SECRET_MAX_BYTES} random bytes"
)


def check_secret(value: object) -> str:
    """A signing secret someone typed, or ValueError(SECRET_MESSAGE): `whsec_`, then strict
    base64 (padded, nothing else in it) of 24 to 64 bytes, as the spec recommends."""
    if not isinstance(value, str) or not value.startswith(SECRET_PREFIX):
        raise ValueError(SECRET_MESSAGE)
    encoded = value[len(SECRET_PREFIX) :]
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(SECRET_MESSAGE) from None
    if not SECRET_MIN_BYTES <= len(raw) <= SECRET_MAX_BYTES:
        raise ValueError(SECRET_MESSAGE)
    return value


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
    allow_private: bool = False

    def __post_init__(self) -> None:
        # The pinned connection connects to these addresses and nothing else, so a Destination
        # cannot hold one the guard refuses, however it was made.
        if not self.allow_private:
            for address in self.addresses:
                why = non_public_reason(address)
                if why is not None:
                    raise UnsafeDestination(f"resolves to a non-public address ({address}: {why})")


Resolver = Callable[[str, int], Sequence[str]]


# The address guard. Python's `is_global` is not enough on its own: it calls IPv6 forms that
# embed an IPv4 address global (`::ffff:0:7f00:1`, `::7f00:1`, `64:ff9b::a9fe:a9fe`,
# `2002:7f00:1::1`), and site-local `fec0::/10`, multicast and some reserved ranges too. So the
# guard decides from its own table (IANA's special-purpose registries), unwraps every IPv6 form
# that carries an IPv4 address and judges that address, and asks `is_global` last, only ever to
# refuse more.

# The ranges that are not globally reachable, IPv4 and IPv6, each with the reason a refusal
# names: an address takes the reason of the first range that holds it.
NON_PUBLIC: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.ip_network(network), why)
    for network, why in (
        ("0.0.0.0/8", "'this network' (0.0.0.0/8)"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "shared carrier-grade NAT space"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local (cloud metadata lives there)"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol assignments"),
        ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "the deprecated 6to4 relay anycast"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved or broadcast"),
        # IPv6 outside global unicast (2000::/3), which is refused whole (GLOBAL_UNICAST_V6):
        # named so that a refusal says what the address is.
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("::/96", "IPv4-compatible (deprecated)"),
        ("::ffff:0:0:0/96", "IPv4-translated (a translator's internal form)"),
        ("64:ff9b:1::/48", "local-use NAT64"),
        ("100::/64", "discard-only"),
        ("5f00::/16", "segment routing"),
        ("fc00::/7", "unique-local (private)"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local (deprecated)"),
        ("ff00::/8", "multicast"),
        # Inside global unicast.
        ("2001::/32", "Teredo"),  # also inside 2001::/23, refused whole (below)
        ("2001:2::/48", "benchmarking"),
        ("2001:db8::/32", "documentation"),
        ("2001::/23", "IETF protocol assignments"),
        ("3fff::/20", "documentation"),
    )
)

_V6 = ipaddress.IPv6Network

# Every globally routable IPv6 unicast address is in 2000::/3; anything else is refused unless
# it is one of the IPv4-carrying forms below whose IPv4 address is public.
GLOBAL_UNICAST_V6 = _V6("2000::/3")
# Forms that carry an IPv4 address in their low 32 bits, judged by that address.
MAPPED_V6 = _V6("::ffff:0:0/96")  # IPv4-mapped: a dual-stack socket connects to the IPv4 address
NAT64_V6 = _V6("64:ff9b::/96")  # the well-known NAT64 prefix (DNS64 answers on IPv6-only hosts)
SIXTOFOUR_V6 = _V6("2002::/16")  # 6to4: the IPv4 address is in bits 16-47


def non_public_reason(address: str) -> str | None:
    """Why a resolved address may not receive webhooks, or None when it is public.

    IPv4-mapped, NAT64 (64:ff9b::/96) and 6to4 addresses are judged by the IPv4 address they
    carry: a public one behind them is a public host (on an IPv6-only network every IPv4-only
    receiver resolves to its NAT64 form), a private one is a way round the guard.
    IPv4-compatible (::/96, deprecated), IPv4-translated (::ffff:0:0:0/96, SIIT's internal form),
    local-use NAT64 (64:ff9b:1::/48, a site's own translator) and Teredo (2001::/32, a client
    tunnel whose address is obfuscated) are refused whatever they carry: no public receiver
    lives there.
    """
    text = address.strip()
    if "%" in text:
        return "scoped (it names a network interface)"
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return "not an IP address"
    if isinstance(ip, ipaddress.IPv6Address):
        for network, form, embedded in (
            (MAPPED_V6, "IPv4-mapped", ip.ipv4_mapped),
            (NAT64_V6, "NAT64", _low32(ip)),
            (SIXTOFOUR_V6, "6to4", ip.sixtofour),
        ):
            if ip in network:
                assert embedded is not None  # every address of these networks carries one
                why = _listed_reason(embedded)
                return None if why is None else f"{form} form of {embedded}, {why}"
    return _listed_reason(ip)


def _low32(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)


def _listed_reason(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """The reason of the first range of NON_PUBLIC that holds `ip`; for an IPv6 address in none,
    whether it is in global unicast; then `is_global` has the last word (only ever to refuse
    more)."""
    for network, why in NON_PUBLIC:
        if ip in network:
            return why
    if ip.version == 6 and ip not in GLOBAL_UNICAST_V6:
        return "outside global unicast (2000::/3)"
    if not ip.is_global:
        return "not globally routable"
    return None


def is_public(address: str) -> bool:
    """Globally routable: see `non_public_reason` for everything that is refused."""
    return non_public_reason(address) is None


def check_destination(url: str, resolve: Resolver, *, allow_private: bool) -> Destination:
    """Where a webhook for `url` may be posted, or UnsafeDestination saying why not.

    https only, to addresses that are all public. `allow_private` (development) also admits
    loopback, private and link-local addresses, and plain http for those only. Every address
    the host resolves to is checked: one private answer is enough to refuse.
    """
    if not isinstance(url, str) or not url.strip():
        raise UnsafeDestination("must be an https URL")
    if len(url) > MAX_URL_LENGTH:
        raise UnsafeDestination(f"must be at most {MAX_URL_LENGTH} characters")
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
    reasons = {a: why for a in addresses if (why := non_public_reason(a)) is not None}
    private = list(reasons)
    if private and not allow_private:
        raise UnsafeDestination(
            f"host {host!r} resolves to a non-public address ({private[0]}: "
            f"{reasons[private[0]]}); only public addresses may receive webhooks"
        )
    if scheme == "http" and not (allow_private and len(private) == len(addresses)):
        raise UnsafeDestination("must be an https URL")
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return Destination(scheme, host, port, target, addresses, allow_private)
