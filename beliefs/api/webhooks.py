"""A runtime manages its own webhook endpoints. The secret is in the answer to the creation
and to a rotation, and never again."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from beliefs.api.auth import IsRuntime, runtime_of
from beliefs.api.views import WRITES, actor, read_schema, validated, write_schema
from beliefs.domain.vocabulary import MAX_LABEL_LENGTH
from beliefs.domain.webhooks import EVENT_TYPES
from beliefs.schemas import JSONBooleanField, StrictSerializer, TextField
from beliefs.services.webhooks import endpoints as webhook_endpoints

MAX_URL_LENGTH = 2000


class EndpointIn(StrictSerializer):
    url = TextField(max_length=MAX_URL_LENGTH, help_text="https, public addresses only")
    event_types = serializers.ListField(
        child=serializers.ChoiceField(choices=list(EVENT_TYPES)),
        required=False,
        help_text="the events to receive; empty or left out: every event",
    )
    description = TextField(required=False, allow_blank=True, max_length=MAX_LABEL_LENGTH)
    active = JSONBooleanField(required=False, default=True)


class EndpointOut(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()
    event_types = serializers.ListField(child=serializers.CharField())
    active = serializers.BooleanField()
    description = serializers.CharField()
    created_at = serializers.DateTimeField()
    previous_secret_until = serializers.DateTimeField(allow_null=True)
    secret = serializers.CharField(
        required=False, help_text="whsec_…: only in the answer to a creation or a rotation"
    )


class EndpointListOut(serializers.Serializer):
    results = EndpointOut(many=True)


class EndpointListApi(APIView):
    permission_classes = [IsRuntime]

    @read_schema(EndpointListOut, summary="Your runtime's webhook endpoints")
    def get(self, request: Request) -> Response:
        endpoints = webhook_endpoints.live_endpoints(runtime_of(request)).order_by("id")
        return Response({"results": [webhook_endpoints.endpoint_payload(e) for e in endpoints]})

    @write_schema(
        EndpointIn,
        EndpointOut,
        status=201,
        summary="Register an endpoint (its secret is shown once)",
    )
    def post(self, request: Request) -> Response:
        data = validated(EndpointIn, request.data)
        endpoint, secret = webhook_endpoints.endpoint_create(
            runtime=runtime_of(request),
            url=data["url"],
            event_types=data.get("event_types"),
            description=data.get("description", ""),
            active=data["active"],
            actor=actor(request),
        )
        return Response(
            webhook_endpoints.endpoint_payload(endpoint, secret), status=status.HTTP_201_CREATED
        )


class EndpointDetailApi(APIView):
    permission_classes = [IsRuntime]

    @extend_schema(
        responses={204: None, **WRITES},
        summary="Delete an endpoint (it receives nothing more; its delivery history stays)",
    )
    def delete(self, request: Request, endpoint_id: int) -> Response:
        endpoint = webhook_endpoints.endpoint_for_runtime(endpoint_id, runtime_of(request))
        webhook_endpoints.endpoint_delete(endpoint=endpoint, actor=actor(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class EndpointRotateApi(APIView):
    permission_classes = [IsRuntime]

    @extend_schema(
        request=None,
        responses={200: EndpointOut, **WRITES},
        summary="A new secret (shown once); the old one also signs for 24 hours",
    )
    def post(self, request: Request, endpoint_id: int) -> Response:
        endpoint = webhook_endpoints.endpoint_for_runtime(endpoint_id, runtime_of(request))
        endpoint, secret = webhook_endpoints.endpoint_rotate_secret(
            endpoint=endpoint, actor=actor(request)
        )
        return Response(webhook_endpoints.endpoint_payload(endpoint, secret))
