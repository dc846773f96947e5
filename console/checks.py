"""System checks of the console's own settings: the public base URL and the passkeys' relying
party, for `manage.py check --deploy`, and the connection pool's size against the request
threads, for every `check`.

CONSOLE_BASE_URL is where the links in emails send people. Its default suits `make run`
(http://127.0.0.1:8000); in production a link to a loopback, private or plain-http address
is at best dead and at worst somebody else's page, so the deploy check refuses it. The server
still starts without one (see docs/production.md): the pages use relative links, and a
production-settings server on loopback (the benchmark, the HTTP tests) is legitimate.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from django.apps import AppConfig
from django.conf import settings
from django.core import checks

# The checks `make serve` (console.serve) also runs before it listens, with DEBUG off: settings
# without which the server would start and then fail people at their first receipt or passkey.
STARTUP = "startup"

# Names that only resolve inside a machine or a private network (RFC 6761, 6762, 8375).
LOCAL_SUFFIXES = (".localhost", ".local", ".localdomain", ".internal", ".lan", ".home.arpa")


def base_url_problem(url: str) -> str | None:
    """What makes `url` unfit as the public base of the links in emails, or None."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises for a port that is not a number in range
    except ValueError:
        return "is not a URL"
    if parts.scheme != "https":
        return "must be an https URL"
    host = (parts.hostname or "").rstrip(".")
    if not host:
        return "has no host"
    if parts.username is not None or parts.password is not None:
        return "must not carry a user name or password"
    if parts.query or parts.fragment:
        return "must not carry a query or a fragment (the links are appended to it)"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None:
        if not address.is_global:
            return "names a loopback, private or reserved address"
        return None
    if host == "localhost" or host.endswith(LOCAL_SUFFIXES) or "." not in host:
        return "names a local host, not one people reach from elsewhere"
    return None


@checks.register(checks.Tags.security, deploy=True)
def check_base_url(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    url = settings.CONSOLE_BASE_URL
    problem = base_url_problem(url)
    if problem is None:
        return []
    return [
        checks.Error(
            f"CONSOLE_BASE_URL {problem}: it is {url!r}, and the links in emails would send "
            "people there.",
            hint="Set CONSOLE_BASE_URL to the public https address of the console, e.g. "
            "https://console.example.org.",
            id="console.E001",
        )
    ]


WEBAUTHN_HINT = (
    "Set CONSOLE_WEBAUTHN_RP_ID to the console's domain name (e.g. console.example.org) and "
    "CONSOLE_WEBAUTHN_ORIGINS to the origins its pages are served from, comma-separated (e.g. "
    "https://console.example.org)."
)


def webauthn_problems(rp_id: str, origins: Sequence[str]) -> list[str]:
    """What keeps passkeys from working, or from being bound to the console's own domain, with
    this relying party (`rp_id`) and these accepted origins."""
    if not rp_id:
        return [
            "CONSOLE_WEBAUTHN_RP_ID is not set: passkeys would be bound to whatever host each "
            "request names."
        ]
    try:
        ipaddress.ip_address(rp_id.strip("[]"))
    except ValueError:
        pass
    else:
        return [
            f"CONSOLE_WEBAUTHN_RP_ID is an IP address ({rp_id!r}): browsers refuse passkeys "
            "for one; it must be a domain name."
        ]
    problems = []
    if not origins:
        problems.append(
            "CONSOLE_WEBAUTHN_ORIGINS is not set: a passkey would be accepted from whatever "
            "origin the request claims."
        )
    for origin in origins:
        try:
            parts = urlsplit(origin)
            host = (parts.hostname or "").rstrip(".")
            _ = parts.port
        except ValueError:
            host = ""
        local = host == "localhost" or host.endswith(".localhost")
        if not host or (parts.scheme != "https" and not (parts.scheme == "http" and local)):
            problems.append(
                f"CONSOLE_WEBAUTHN_ORIGINS: {origin!r} is not an https origin (scheme://host"
                "[:port]): browsers offer passkeys only there."
            )
        elif host != rp_id and not host.endswith(f".{rp_id}"):
            problems.append(
                f"CONSOLE_WEBAUTHN_ORIGINS: {origin!r} is not on {rp_id!r} "
                "(CONSOLE_WEBAUTHN_RP_ID) or a subdomain of it: browsers refuse the pair."
            )
    return problems


@checks.register(checks.Tags.security, STARTUP, deploy=True)
def check_webauthn_relying_party(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    problems = webauthn_problems(settings.CONSOLE_WEBAUTHN_RP_ID, settings.CONSOLE_WEBAUTHN_ORIGINS)
    return [checks.Error(problem, hint=WEBAUTHN_HINT, id="console.E002") for problem in problems]


def pool_problem(pool: Any, threads: int) -> str | None:  # noqa: ANN401 - the pool's OPTIONS
    """Why a connection pool (the `pool` of the database's OPTIONS, if any) cannot serve
    `threads` request threads at once, or None."""
    if not isinstance(pool, dict) or pool.get("max_size", 0) >= threads:
        return None
    return (
        f"DATABASE_POOL is {pool['max_size']}, fewer connections than the {threads} threads "
        "(REQUEST_THREADS) that answer requests in each process: a request may wait for a "
        "connection, and gets the database-busy 503 after 10 s."
    )


# Not tagged `database`: Django runs those only when asked to (`check --database`).
@checks.register("console")
def check_pool_serves_every_request_thread(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    pool = settings.DATABASES["default"].get("OPTIONS", {}).get("pool")
    problem = pool_problem(pool, settings.REQUEST_THREADS)
    if problem is None:
        return []
    return [
        checks.Warning(
            problem, hint="Set DATABASE_POOL to at least REQUEST_THREADS.", id="console.W001"
        )
    ]


@checks.register(checks.Tags.security, deploy=True)
def check_sso_issuer(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """The sign-on provider's discovery, keys and tokens come from OIDC_ISSUER: over plain http
    anyone on the way could hand the console their own keys, and sign in as anyone."""
    issuer = settings.OIDC_ISSUER
    if not issuer or urlsplit(issuer).scheme == "https":
        return []
    return [
        checks.Error(
            f"OIDC_ISSUER must be an https URL in production: it is {issuer!r}.",
            hint="Set OIDC_ISSUER to the provider's https issuer URL (docs/sso.md).",
            id="console.E003",
        )
    ]
