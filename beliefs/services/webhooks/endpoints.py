"""A runtime's webhook endpoints: registering one (its URL checked against the address
guard), deleting it, rotating its secret, and what is wrong with a stored one."""

from __future__ import annotations

import json
import socket
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from beliefs.domain import webhooks as rules
from beliefs.domain.vocabulary import MAX_LABEL_LENGTH, AuditKind
from beliefs.domain.webhooks import Destination, UnsafeDestination
from beliefs.errors import InvalidInput, NotFound, field_error
from beliefs.models import Runtime, WebhookEndpoint
from beliefs.net import to_uri
from beliefs.services.audit import Actor, audit

# After a rotation the old secret keeps signing this long, so receivers can switch over.
PREVIOUS_SECRET_GRACE = timedelta(hours=24)


def resolve(host: str, port: int) -> list[str]:
    """Every address the host resolves to (all are checked, not just the first)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def endpoint_url(url: Any) -> str:
    """The URL as stored: an IRI (non-ASCII host, path or query) becomes the URI it stands for,
    so every later step (the guard, the request line) sees ASCII only."""
    if not isinstance(url, str):
        return url  # the guard says what is wrong with it
    try:
        return to_uri(url.strip())
    except ValueError as exc:
        raise field_error("url", f"is not a valid URL ({exc})") from None


def destination(url: Any, field: str = "url") -> Destination:
    try:
        return rules.check_destination(
            endpoint_url(url), resolve, allow_private=settings.CONSOLE_WEBHOOK_ALLOW_PRIVATE
        )
    except UnsafeDestination as exc:
        raise field_error(field, str(exc)) from None


def parse_event_types(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise field_error("event_types", "must be a list of event types")
    unknown = [v for v in value if v not in rules.EVENT_TYPES]
    if unknown:
        raise field_error(
            "event_types",
            f"unknown event type {unknown[0]!r}; one of {', '.join(rules.EVENT_TYPES)}",
        )
    return sorted(set(value))


def live_endpoints(runtime: Runtime) -> Any:
    """The runtime's endpoints that were not deleted (active or not)."""
    return WebhookEndpoint.objects.filter(runtime=runtime, deleted_at__isnull=True)


def endpoint_for_runtime(endpoint_id: Any, runtime: Runtime) -> WebhookEndpoint:
    """The runtime's own endpoint; 404 for anyone else's (existence not leaked) and for a
    deleted one."""
    endpoint = live_endpoints(runtime).filter(pk=endpoint_id).first()
    if endpoint is None:
        raise NotFound("No such webhook endpoint.")
    return endpoint


def endpoint_audit(kind: AuditKind, endpoint: WebhookEndpoint, actor: Actor, **data: Any) -> None:
    audit(
        kind,
        actor=actor,
        subject=endpoint.url[:MAX_LABEL_LENGTH],
        data={"endpoint": endpoint.pk, "runtime": endpoint.runtime.name, **data},
    )


def _description(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise field_error("description", "must be a string")
    if len(value) > MAX_LABEL_LENGTH:
        raise field_error("description", f"must be at most {MAX_LABEL_LENGTH} characters")
    return value


@transaction.atomic
def endpoint_create(
    *,
    runtime: Runtime,
    url: Any,
    event_types: Any = None,
    description: Any = "",
    active: Any = True,
    actor: Actor,
) -> tuple[WebhookEndpoint, str]:
    """Register an endpoint; returns it and its secret, which is shown this once. A runtime
    has at most CONSOLE_WEBHOOK_MAX_ENDPOINTS (deleted ones do not count)."""
    destination(url)
    if not isinstance(active, bool):
        raise field_error("active", "must be true or false")
    # The runtime's row is locked so that two registrations at once cannot both pass the cap.
    Runtime.objects.select_for_update(no_key=True).filter(pk=runtime.pk).first()
    limit = settings.CONSOLE_WEBHOOK_MAX_ENDPOINTS
    if live_endpoints(runtime).count() >= limit:
        raise InvalidInput(
            f"A runtime can have at most {limit} webhook endpoints; delete one first.",
            code="too_many_endpoints",
            extra={"limit": limit},
        )
    secret = rules.new_secret()
    endpoint = WebhookEndpoint.objects.create(
        runtime=runtime,
        url=endpoint_url(url),
        secret=secret,
        event_types=parse_event_types(event_types),
        description=_description(description),
        active=active,
    )
    endpoint_audit(
        AuditKind.WEBHOOK_ENDPOINT_CREATED, endpoint, actor, event_types=endpoint.event_types
    )
    return endpoint, secret


@transaction.atomic
def endpoint_delete(*, endpoint: WebhookEndpoint, actor: Actor) -> None:
    """Deactivate it for good: it receives nothing more, leaves the runtime's list, and its
    deliveries stay readable as history. Deliveries still pending fail at their next attempt
    ("the endpoint is inactive")."""
    now = timezone.now()
    done = WebhookEndpoint.objects.filter(pk=endpoint.pk, deleted_at__isnull=True).update(
        active=False, deleted_at=now, updated_at=now
    )
    if done:
        endpoint.active, endpoint.deleted_at = False, now
        endpoint_audit(AuditKind.WEBHOOK_ENDPOINT_DELETED, endpoint, actor)


@transaction.atomic
def endpoint_rotate_secret(
    *, endpoint: WebhookEndpoint, actor: Actor
) -> tuple[WebhookEndpoint, str]:
    """A new secret, shown this once; the old one also signs for PREVIOUS_SECRET_GRACE."""
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    secret = rules.new_secret()
    endpoint.previous_secret = endpoint.secret
    endpoint.previous_secret_until = timezone.now() + PREVIOUS_SECRET_GRACE
    endpoint.secret = secret
    endpoint.save(
        update_fields=["secret", "previous_secret", "previous_secret_until", "updated_at"]
    )
    endpoint_audit(
        AuditKind.WEBHOOK_ENDPOINT_SECRET_ROTATED,
        endpoint,
        actor,
        previous_secret_until=endpoint.previous_secret_until.isoformat(),
    )
    return endpoint, secret


def endpoint_payload(endpoint: WebhookEndpoint, secret: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": endpoint.pk,
        "url": endpoint.url,
        "event_types": endpoint.event_types,
        "active": endpoint.active,
        "description": endpoint.description,
        "created_at": endpoint.created_at.isoformat(),
        "previous_secret_until": (
            endpoint.previous_secret_until.isoformat() if endpoint.previous_secret_until else None
        ),
    }
    if secret is not None:
        data["secret"] = secret
    return data


def endpoint_problem(endpoint: WebhookEndpoint) -> str:
    """What is wrong with a stored endpoint (a row the services did not write: the admin, a
    migration, a hand edit), or "". Cheap and offline: it runs in the runtime's request."""
    types = endpoint.event_types
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        return f"event_types is not a list of event types: {json.dumps(types)[:100]}"
    unknown = [t for t in types if t not in rules.EVENT_TYPES and t != rules.WEBHOOK_TEST]
    if unknown:
        return f"event_types has an unknown event type: {unknown[0][:100]!r}"
    url = endpoint.url
    if not isinstance(url, str) or not url.isascii() or any(ord(c) < 33 for c in url):
        return "url is not an ASCII URL without spaces (register it again)"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        return f"url is not a valid URL ({exc})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "url is not an http(s) URL with a host"
    return ""
