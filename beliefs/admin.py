"""The admin, for staff: people and roles, runtimes and keys, webhook endpoints, deliveries
(read-only, with redeliver), the audit log (read-only) and task class ownership.

Changes that the domain audits go through the services, so the admin leaves the same trace as
every other way in.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from rest_framework_api_key.admin import APIKeyModelAdmin
from rest_framework_api_key.models import APIKey

from beliefs.domain.webhooks import new_secret
from beliefs.models import (
    AuditEvent,
    EmailNotification,
    Runtime,
    RuntimeAPIKey,
    TaskClass,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)
from beliefs.services import Actor, audit, runtime_key_revoke, task_class_transfer
from beliefs.services.webhooks import delivery_redeliver, destination

# Keys are runtime keys now; the library's own key model is no longer used.
if admin.site.is_registered(APIKey):
    admin.site.unregister(APIKey)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
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


@admin.register(Runtime)
class RuntimeAdmin(admin.ModelAdmin):
    list_display = ("name", "created_at")
    search_fields = ("name",)
    inlines = [KeyInline, EndpointInline]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # what a runtime owns must stay attributable; revoke its keys instead


@admin.register(RuntimeAPIKey)
class RuntimeAPIKeyAdmin(APIKeyModelAdmin):
    """Create (the key is shown once, in a message) and revoke; nothing else."""

    list_display = ("prefix", "runtime", "name", "created", "expiry_date", "revoked")
    list_filter = ("runtime", "revoked")  # type: ignore[assignment]  # the stub pins a 1-tuple
    search_fields = ("name", "prefix", "runtime__name")  # type: ignore[assignment]
    fields = ("runtime", "name", "expiry_date", "revoked", "prefix")
    actions = ["revoke"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        fields = tuple(super().get_readonly_fields(request, obj))
        return fields + ("runtime",) if obj is not None else fields

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(  # type: ignore[override]  # the package's stub narrows obj
        self, request: HttpRequest, obj: Any, form: Any, change: bool
    ) -> None:
        revoking = change and obj.revoked and not obj._initial_revoked
        if revoking:
            obj.revoked = False
            super().save_model(request, obj, form, change)
            runtime_key_revoke(key=obj, actor=Actor.person(request.user))
            return
        super().save_model(request, obj, form, change)
        if not change:
            audit(
                "runtime_key.created",
                actor=Actor.person(request.user),
                subject=obj.runtime.name,
                data={"runtime": obj.runtime.name, "prefix": obj.prefix, "key_name": obj.name},
            )

    @admin.action(description="Revoke the selected keys (cannot be undone)")
    def revoke(self, request: HttpRequest, queryset: QuerySet[RuntimeAPIKey]) -> None:
        for key in queryset.select_related("runtime"):
            runtime_key_revoke(key=key, actor=Actor.person(request.user))
        self.message_user(request, "Revoked.", messages.SUCCESS)


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    list_display = ("url", "runtime", "active", "created_at")
    list_filter = ("runtime", "active")
    fields = ("runtime", "url", "event_types", "active", "description", "previous_secret_until")
    readonly_fields = ("previous_secret_until",)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        # The URL passed the same guard as the API in the form's clean_url.
        created = obj.pk is None
        if created:
            obj.secret = new_secret()
        super().save_model(request, obj, form, change)
        if created:
            messages.warning(
                request,
                f"The signing secret for {obj.url} is {obj.secret}. Store it now: it is not "
                "shown again.",
            )

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)

        def clean_url(self: Any) -> str:
            from django.core.exceptions import ValidationError

            from beliefs.errors import InvalidInput

            url = self.cleaned_data["url"]
            try:
                destination(url)
            except InvalidInput as exc:
                raise ValidationError(exc.detail) from None
            return url

        form.clean_url = clean_url  # type: ignore[attr-defined]
        return form


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
        return obj.event.type

    @admin.display(description="webhook-id")
    def webhook_id(self, obj: WebhookDelivery) -> str:
        return obj.event.webhook_id

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


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    """Read-only here, and append-only in the database whatever any admin did."""

    list_display = ("created_at", "kind", "actor", "actor_key_prefix", "subject", "instance_id")
    list_filter = ("kind",)
    search_fields = ("actor", "subject", "kind", "actor_key_prefix")

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        return {}


@admin.register(TaskClass)
class TaskClassAdmin(admin.ModelAdmin):
    """Only ownership is changed here; classification has its own audited pages."""

    list_display = ("key", "name", "owner")
    list_filter = ("owner",)
    search_fields = ("key", "name")
    fields = ("key", "name", "owner")
    readonly_fields = ("key", "name")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        task_class_transfer(task_class=obj, owner=obj.owner, actor=Actor.person(request.user))
