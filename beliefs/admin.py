"""The admin, for staff: people and roles, runtimes and keys, webhook endpoints, deliveries
(read-only, with redeliver), the audit log (read-only) and task class ownership.

Changes that the domain audits go through the services, or write the same audit events in the
admin's own transaction (Django runs each save and delete of the admin in one), so the admin
leaves the same trace as every other way in. Its forms check what the API checks, with the same
validators, and show the message in the form.

Untrusted text (names, URLs, descriptions, errors, audit data) is shown as read: hidden
characters revealed as ⟨U+202E⟩ and words that mix look-alike scripts marked, in the lists and
on read-only fields (`Revealing`). The models' `__str__` reveal too, for titles, links and
filters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.options import BaseModelAdmin
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db import models, transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html
from rest_framework_api_key.admin import APIKeyModelAdmin
from rest_framework_api_key.models import APIKey

from beliefs.domain.vocabulary import MAX_LABEL_LENGTH, AuditKind
from beliefs.domain.webhooks import check_secret, new_secret
from beliefs.errors import ServiceError
from beliefs.models import (
    AuditEvent,
    EmailNotification,
    OutgoingEmail,
    Runtime,
    RuntimeAPIKey,
    SignInIdentity,
    TaskClass,
    TaskClassShare,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)
from beliefs.services.audit import Actor, audit
from beliefs.services.erasure import task_class_set_retention
from beliefs.services.runtimes import (
    check_audience_names,
    check_runtime_name,
    runtime_key_revoke,
    task_class_transfer,
)
from beliefs.services.webhooks.delivery import delivery_redeliver
from beliefs.services.webhooks.endpoints import (
    PREVIOUS_SECRET_GRACE,
    destination,
    endpoint_delete,
    parse_event_types,
)
from beliefs.shown import shown_checked, shown_list

# Keys are runtime keys now; the library's own key model is no longer used.
if admin.site.is_registered(APIKey):
    admin.site.unregister(APIKey)

VIA = {"via": "admin"}


def _invalid(exc: ServiceError, field: str) -> ValidationError:
    """A service's refusal as the form field's message."""
    return ValidationError(exc.fields.get(field, [exc.detail])[0])


# --- showing untrusted text -----------------------------------------------------------------

_TEXT_FIELDS = (models.CharField, models.TextField, models.JSONField, models.ForeignKey)


def revealed(name: str, label: str | None = None) -> Callable[[Any], str]:
    """A column or read-only field showing `name` as read: escaped, hidden characters revealed,
    look-alike letters marked."""

    def show(obj: Any) -> str:
        value = getattr(obj, name)
        if value is None or value == "":
            return "-"
        if isinstance(value, models.Model):
            value = str(value)
        if isinstance(value, dict):  # JSON (audit data): indented, its lines kept
            return format_html('<pre class="revealed-json">{}</pre>', shown_checked(value))
        return shown_list(value) if isinstance(value, list) else shown_checked(value)

    show.__name__ = name
    return admin.display(description=label or name.replace("_", " "), ordering=name)(show)


class RevealFields(BaseModelAdmin):
    """Read-only fields (and every field of a page the user may only view) show their text as
    read, through `revealed`; the editable ones stay inputs."""

    def _reveal(self, field: Any) -> Any:
        if not isinstance(field, str):
            return field
        try:
            model_field = self.model._meta.get_field(field)
        except FieldDoesNotExist:
            return field  # a method of the admin: it shows what it returns
        if not isinstance(model_field, _TEXT_FIELDS):
            return field
        cache: dict[str, Any] = self.__dict__.setdefault("_revealers", {})
        if field not in cache:
            cache[field] = revealed(field, str(model_field.verbose_name))
        return cache[field]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [self._reveal(f) for f in super().get_readonly_fields(request, obj)]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = super().get_fields(request, obj)
        view_only = obj is not None and not self.has_change_permission(request, obj)
        readonly = set(self.get_readonly_fields(request, obj))
        return [self._reveal(f) if view_only or self._reveal(f) in readonly else f for f in fields]


class Revealing(RevealFields, admin.ModelAdmin):
    """`RevealFields`, and the list's columns as read too."""

    def get_list_display(self, request: HttpRequest) -> Any:
        return [self._reveal(f) for f in super().get_list_display(request)]


class ReadOnlyAdmin(Revealing):
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyInline(RevealFields, admin.TabularInline):
    """A runtime's related rows, listed read-only: each is changed on its own page."""

    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class KeyInline(ReadOnlyInline):
    model = RuntimeAPIKey
    fields = ("prefix", "name", "created", "revoked", "expiry_date")
    readonly_fields = fields


class EndpointInline(ReadOnlyInline):
    model = WebhookEndpoint
    fields = ("url", "event_types", "active")
    readonly_fields = fields


# --- runtimes and keys ------------------------------------------------------------------------


class RuntimeForm(forms.ModelForm):
    audiences = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One a line: the names, besides its own, that this runtime may give as the "
        "audience of its receipts (the tool servers it calls). Any other is refused.",
    )

    class Meta:
        model = Runtime
        fields = ("name", "audiences")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initial["audiences"] = "\n".join(self.instance.audiences or [])

    def clean_name(self) -> str:
        try:
            return check_runtime_name(self.cleaned_data["name"])
        except ServiceError as exc:
            raise _invalid(exc, "name") from None

    def clean_audiences(self) -> list[str]:
        try:
            return check_audience_names(self.cleaned_data["audiences"] or "")
        except ServiceError as exc:
            raise _invalid(exc, "audiences") from None


@admin.register(Runtime)
class RuntimeAdmin(Revealing):
    form = RuntimeForm
    list_display = ("name", "created_at")
    search_fields = ("name",)
    fields = ("name", "name_as_read", "audiences")
    readonly_fields = ("name_as_read",)
    inlines = [KeyInline, EndpointInline]

    name_as_read = staticmethod(revealed("name", "name as read"))

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # what a runtime owns must stay attributable; revoke its keys instead

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        actor = Actor.person(request.user)
        stored = Runtime.objects.get(pk=obj.pk) if change else None
        before = stored.name if stored is not None else None
        audiences_before = list(stored.audiences) if stored is not None else []
        super().save_model(request, obj, form, change)
        if not change:
            audit(AuditKind.RUNTIME_CREATED, actor=actor, subject=obj.name, data=VIA)
        elif before != obj.name:
            audit(
                AuditKind.RUNTIME_RENAMED,
                actor=actor,
                subject=obj.name,
                data={"before": before, "after": obj.name, **VIA},
            )
        if list(obj.audiences) != audiences_before:
            audit(
                AuditKind.RUNTIME_AUDIENCES_CHANGED,
                actor=actor,
                subject=obj.name,
                data={"before": audiences_before, "after": list(obj.audiences), **VIA},
            )


_KEY_AUDITED = ("name", "expiry_date")


@admin.register(RuntimeAPIKey)
class RuntimeAPIKeyAdmin(Revealing, APIKeyModelAdmin):
    """Create (the key is shown once, in a message), rename, set an expiry and revoke."""

    # The state in words: Django's boolean icons put a red ✕ under "Revoked" for every key
    # that works.
    list_display = ("prefix", "runtime", "name", "created", "expiry_date", "state")
    list_filter = ("runtime", "revoked")  # type: ignore[assignment]  # the stub pins a 1-tuple
    search_fields = ("name", "prefix", "runtime__name")  # type: ignore[assignment]
    fields = ("runtime", "name", "name_as_read", "expiry_date", "revoked", "prefix")
    actions = ["revoke"]

    name_as_read = staticmethod(revealed("name", "name as read"))

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = [*super().get_readonly_fields(request, obj), "name_as_read"]
        return [*fields, "runtime"] if obj is not None else fields

    @admin.display(description="State", ordering="revoked")
    def state(self, obj: RuntimeAPIKey) -> str:
        if obj.revoked:
            return "revoked"
        return "expired" if obj.has_expired else "active"

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(  # type: ignore[override]  # the package's stub narrows obj
        self, request: HttpRequest, obj: Any, form: Any, change: bool
    ) -> None:
        actor = Actor.person(request.user)
        before = RuntimeAPIKey.objects.get(pk=obj.pk) if change else None
        revoking = change and obj.revoked and not obj._initial_revoked
        if revoking:
            obj.revoked = False  # revoked below, by the service, which audits it
        super().save_model(request, obj, form, change)
        if before is None:
            _audit_key(AuditKind.RUNTIME_KEY_CREATED, obj, actor, key_name=obj.name)
        else:
            changed = [f for f in _KEY_AUDITED if getattr(before, f) != getattr(obj, f)]
            if changed:
                _audit_key(
                    AuditKind.RUNTIME_KEY_CHANGED,
                    obj,
                    actor,
                    before={f: _plain(getattr(before, f)) for f in changed},
                    after={f: _plain(getattr(obj, f)) for f in changed},
                )
        if revoking:
            runtime_key_revoke(key=obj, actor=actor)

    @admin.action(description="Revoke the selected keys (cannot be undone)")
    def revoke(self, request: HttpRequest, queryset: QuerySet[RuntimeAPIKey]) -> None:
        for key in queryset.select_related("runtime"):
            runtime_key_revoke(key=key, actor=Actor.person(request.user))
        self.message_user(request, "Revoked.", messages.SUCCESS)


def _audit_key(kind: AuditKind, key: RuntimeAPIKey, actor: Actor, **data: Any) -> None:
    """Audit a change an admin made to a runtime key: its runtime and prefix, then `data`."""
    audit(
        kind,
        actor=actor,
        subject=key.runtime.name,
        data={"runtime": key.runtime.name, "prefix": key.prefix, **data, **VIA},
    )


def _plain(value: Any) -> Any:
    """A value as the audit log's JSON holds it."""
    return value.isoformat() if hasattr(value, "isoformat") else value


# --- webhook endpoints --------------------------------------------------------------------------

SECRET_HELP = (
    "Leave empty to keep the current secret (a new endpoint gets a generated one, shown once). "
    "Or paste a Standard Webhooks secret: whsec_ and the base64 of 24 to 64 random bytes; the "
    "old one keeps signing for 24 hours beside it."
)


class WebhookEndpointForm(forms.ModelForm):
    """The API's checks, through its validators: the address guard, the event types, the
    description's length; and a secret, if one is typed, must be a Standard Webhooks secret."""

    new_secret = forms.CharField(
        required=False,
        strip=True,
        label="Signing secret",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text=SECRET_HELP,
    )

    class Meta:
        model = WebhookEndpoint
        fields = ("runtime", "url", "event_types", "active", "description")

    def clean_url(self) -> str:
        url = self.cleaned_data["url"]
        try:
            destination(url)
        except ServiceError as exc:
            raise _invalid(exc, "url") from None
        return str(url).strip()

    def clean_event_types(self) -> list[str]:
        try:
            return parse_event_types(self.cleaned_data.get("event_types"))
        except ServiceError as exc:
            raise _invalid(exc, "event_types") from None

    def clean_description(self) -> str:
        value = self.cleaned_data.get("description") or ""
        if len(value) > MAX_LABEL_LENGTH:
            raise ValidationError(f"must be at most {MAX_LABEL_LENGTH} characters")
        return str(value)

    def clean_new_secret(self) -> str:
        value = self.cleaned_data.get("new_secret") or ""
        if not value:
            return ""
        try:
            return check_secret(value)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None


_ENDPOINT_AUDITED = ("url", "event_types", "active", "description")


def _endpoint_data(endpoint: WebhookEndpoint, **data: Any) -> dict[str, Any]:
    """What the API's endpoint audit events record, and where the change came from."""
    return {"endpoint": endpoint.pk, "runtime": endpoint.runtime.name, **data, **VIA}


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(Revealing):
    form = WebhookEndpointForm
    list_display = (
        "url", "runtime", "event_types", "description", "active", "deleted_at", "problem",
        "created_at",
    )  # fmt: skip
    list_filter = ("runtime", "active")
    fields = (
        "runtime",
        "url",
        "url_as_read",
        "event_types",
        "active",
        "description",
        "description_as_read",
        "new_secret",
        "previous_secret_until",
        "deleted_at",
        "problem",
    )
    readonly_fields = (
        "url_as_read", "description_as_read", "previous_secret_until", "deleted_at", "problem",
    )  # fmt: skip

    url_as_read = staticmethod(revealed("url", "URL as read"))
    description_as_read = staticmethod(revealed("description", "description as read"))

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        actor = Actor.person(request.user)
        typed = form.cleaned_data.get("new_secret") or ""
        if not change:
            obj.secret = typed or new_secret()
            super().save_model(request, obj, form, change)
            audit(
                AuditKind.WEBHOOK_ENDPOINT_CREATED,
                actor=actor,
                subject=obj.url[:MAX_LABEL_LENGTH],
                data=_endpoint_data(obj, event_types=obj.event_types),
            )
            if not typed:
                messages.warning(
                    request,
                    f"The signing secret for {obj} is {obj.secret}. Store it now: it is not "
                    "shown again.",
                )
            return
        before = WebhookEndpoint.objects.select_related("runtime").get(pk=obj.pk)
        rotated = bool(typed) and typed != before.secret
        if rotated:
            obj.previous_secret = before.secret
            obj.previous_secret_until = timezone.now() + PREVIOUS_SECRET_GRACE
            obj.secret = typed
        super().save_model(request, obj, form, change)
        changed = [f for f in _ENDPOINT_AUDITED if getattr(before, f) != getattr(obj, f)]
        if before.runtime_id != obj.runtime_id:
            changed.insert(0, "runtime")
        if changed:

            def value(endpoint: WebhookEndpoint, field: str) -> Any:
                return endpoint.runtime.name if field == "runtime" else getattr(endpoint, field)

            audit(
                AuditKind.WEBHOOK_ENDPOINT_CHANGED,
                actor=actor,
                subject=obj.url[:MAX_LABEL_LENGTH],
                data=_endpoint_data(
                    obj,
                    before={f: value(before, f) for f in changed},
                    after={f: value(obj, f) for f in changed},
                ),
            )
        if rotated:
            audit(
                AuditKind.WEBHOOK_ENDPOINT_SECRET_ROTATED,
                actor=actor,
                subject=obj.url[:MAX_LABEL_LENGTH],
                data=_endpoint_data(
                    obj, previous_secret_until=obj.previous_secret_until.isoformat()
                ),
            )

    # Deleting goes through the service, which decides what deleting an endpoint means (and
    # audits it); the confirmation page lists the endpoints, not a cascade it may not do.
    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        endpoint_delete(endpoint=obj, actor=Actor.person(request.user))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        with transaction.atomic():
            for endpoint in queryset.select_related("runtime"):
                endpoint_delete(endpoint=endpoint, actor=Actor.person(request.user))

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        endpoints = list(objs)
        names = [f"Webhook endpoint: {endpoint}" for endpoint in endpoints]
        return names, {"webhook endpoints": len(endpoints)}, set(), []


# --- deliveries, events, emails, the audit log ---------------------------------------------------


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    list_display = (
        "event_type",
        "webhook_id",
        "endpoint",
        "state",
        "last_status_code",
        "attempts",
        "next_attempt_at",
        "delivered_at",
    )
    list_filter = ("state", "endpoint__runtime")
    search_fields = ("event__webhook_id", "event__type")
    list_select_related = ("event", "endpoint")
    actions = ["redeliver"]

    @admin.display(description="event")
    def event_type(self, obj: WebhookDelivery) -> str:
        return shown_checked(obj.event.type)

    @admin.display(description="webhook-id")
    def webhook_id(self, obj: WebhookDelivery) -> str:
        return shown_checked(obj.event.webhook_id)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        # Read-only otherwise, but redeliver is the point of this page.
        return {
            name: action
            for name, action in super().get_actions(request).items()
            if name == "redeliver"
        }

    def has_redeliver_permission(self, request: HttpRequest) -> bool:
        return request.user.is_staff

    @admin.action(description="Redeliver (same webhook-id)", permissions=["redeliver"])
    def redeliver(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        done = sum(
            delivery_redeliver(delivery=d, actor=Actor.person(request.user))
            for d in queryset.select_related("event")
        )
        self.message_user(request, f"{done} queued for redelivery.", messages.SUCCESS)


@admin.register(WebhookEvent)
class WebhookEventAdmin(ReadOnlyAdmin):
    list_display = ("type", "webhook_id", "runtime", "instance", "sequence", "created_at")
    list_filter = ("type", "runtime")
    search_fields = ("webhook_id",)


@admin.register(EmailNotification)
class EmailNotificationAdmin(ReadOnlyAdmin):
    list_display = ("kind", "recipient", "instance", "state", "attempts", "sent_at")
    list_filter = ("kind", "state")


@admin.register(OutgoingEmail)
class OutgoingEmailAdmin(ReadOnlyAdmin):
    """The emails themselves (a digest carries several notifications): read-only."""

    list_display = ("kind", "recipient", "state", "attempts", "not_before", "sent_at")
    list_filter = ("kind", "state")


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    """Read-only here, and append-only in the database whatever any admin did."""

    list_display = ("created_at", "kind", "actor", "actor_key_prefix", "subject", "instance_id")
    list_filter = ("kind",)
    search_fields = ("actor", "subject", "kind", "actor_key_prefix")

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        return {}


# --- task classes ---------------------------------------------------------------------------------


class ShareInline(ReadOnlyInline):
    """Whom the owner shared the class with, and whether with its history (the owner changes
    that through the API, audited)."""

    model = TaskClassShare
    fields = ("runtime", "history", "created_at", "updated_at")
    readonly_fields = fields
    show_change_link = False
    verbose_name = "share with another runtime"
    verbose_name_plural = "shared with other runtimes (history: they pool values with the owner)"


@admin.register(TaskClass)
class TaskClassAdmin(Revealing):
    """Only ownership and retention are changed here; classification has its own audited
    pages."""

    list_display = ("key", "name", "owner", "open_slots", "retention_days")
    list_filter = ("owner",)
    search_fields = ("key", "name")
    fields = ("key", "name", "owner", "open_slots", "retention_days")
    readonly_fields = ("key", "name", "open_slots")
    inlines = (ShareInline,)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        actor = Actor.person(request.user)
        task_class_transfer(task_class=obj, owner=obj.owner, actor=actor)
        task_class_set_retention(task_class=obj, days=obj.retention_days, actor=actor)


@admin.register(SignInIdentity)
class SignInIdentityAdmin(admin.ModelAdmin):
    """Who a single sign-on provider's subject is here. Adding a row links an existing account
    (one that signed in with a password) to its subject at the provider, before its first
    single sign-on; otherwise that sign-in creates a new person."""

    list_display = ("user", "issuer", "subject", "last_sign_in_at")
    list_select_related = ("user",)
    search_fields = ("user__username", "subject")
    raw_id_fields = ("user",)
    readonly_fields = ("created_at", "last_sign_in_at")
