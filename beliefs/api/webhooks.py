"""A runtime manages its own webhook endpoints. The secret is in the answer to the creation
and to a rotation, and never again."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from beliefs.api.auth import IsRuntime, runtime_of
from beliefs.api.views import ERRORS, actor, body
from beliefs.domain.webhooks import EVENT_TYPES
from beliefs.errors import InvalidInput
from beliefs.models import WebhookEndpoint
from beliefs.services import webhooks

ENDPOINT_FIELDS = {"url", "event_types", "description", "active"}


class EndpointIn(serializers.Serializer):
    url = serializers.CharField(help_text="https, public addresses only")
    event_types = serializers.ListField(
        child=serializers.ChoiceField(choices=list(EVENT_TYPES)),
        required=False,
        help_text="the events to receive; empty or left out: every event",
    )
    description = serializers.CharField(required=False)
    active = serializers.BooleanField(required=False)


class EndpointListApi(APIView):
    permission_classes = [IsRuntime]

    @extend_schema(responses={200: dict, **ERRORS}, summary="Your runtime's webhook endpoints")
    def get(self, request: Request) -> Response:
        endpoints = WebhookEndpoint.objects.filter(runtime=runtime_of(request)).order_by("id")
        return Response({"results": [webhooks.endpoint_payload(e) for e in endpoints]})

    @extend_schema(
        request=EndpointIn,
        responses={201: dict, **ERRORS},
        summary="Register an endpoint (its secret is shown once)",
    )
    def post(self, request: Request) -> Response:
        data = body(request)
        unknown = sorted(set(data) - ENDPOINT_FIELDS)
        if unknown:
            raise InvalidInput(
                f"{unknown[0]}: unknown field", fields={unknown[0]: ["unknown field"]}
            )
        endpoint, secret = webhooks.endpoint_create(
            runtime=runtime_of(request),
            url=data.get("url"),
            event_types=data.get("event_types"),
            description=data.get("description", ""),
            active=data.get("active", True),
            actor=actor(request),
        )
        return Response(webhooks.endpoint_payload(endpoint, secret), status=status.HTTP_201_CREATED)


class EndpointDetailApi(APIView):
    permission_classes = [IsRuntime]

    @extend_schema(responses={204: None, **ERRORS}, summary="Delete an endpoint")
    def delete(self, request: Request, endpoint_id: int) -> Response:
        endpoint = webhooks.endpoint_for_runtime(endpoint_id, runtime_of(request))
        webhooks.endpoint_delete(endpoint=endpoint, actor=actor(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class EndpointRotateApi(APIView):
    permission_classes = [IsRuntime]

    @extend_schema(
        request=None,
        responses={200: dict, **ERRORS},
        summary="A new secret (shown once); the old one also signs for 24 hours",
    )
    def post(self, request: Request, endpoint_id: int) -> Response:
        endpoint = webhooks.endpoint_for_runtime(endpoint_id, runtime_of(request))
        endpoint, secret = webhooks.endpoint_rotate_secret(endpoint=endpoint, actor=actor(request))
        return Response(webhooks.endpoint_payload(endpoint, secret))
