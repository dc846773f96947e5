"""The runtime and person API. Views parse, check who is asking, call one service
and answer; every rule lives in `beliefs.services`."""

from __future__ import annotations

import math
from typing import Any

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from beliefs import selectors, services
from beliefs.api.auth import IsPerson, IsRuntime, is_runtime
from beliefs.api.conditional import conditional_response
from beliefs.errors import InvalidInput
from beliefs.models import PromptState, TaskInstance
from beliefs.services import Actor, idempotency

# Deep enough for any world or value a runtime means; shallow enough that nothing downstream
# (flattening, canonical JSON, the database's JSON functions) can run out of stack.
MAX_JSON_DEPTH = 32


def _check_json(data: dict[str, Any]) -> None:
    """Refuse what JSON cannot carry back out: numbers out of range (1e400 parses as inf) and
    nesting deeper than MAX_JSON_DEPTH. Iterative, so a hostile body cannot recurse us."""
    stack: list[tuple[str, Any, int]] = [(str(k), v, 1) for k, v in data.items()]
    while stack:
        path, value, depth = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidInput(
                f"{path}: number out of range", fields={path: ["number out of range"]}
            )
        if isinstance(value, dict | list):
            if depth >= MAX_JSON_DEPTH:
                field = path.split(".", 1)[0].split("[", 1)[0]
                message = f"nested more than {MAX_JSON_DEPTH} levels deep"
                raise InvalidInput(f"{field}: {message}", fields={field: [message]})
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, child in items:
                child_path = f"{path}.{key}" if isinstance(value, dict) else f"{path}[{key}]"
                stack.append((child_path, child, depth + 1))


def body(request: Request) -> dict[str, Any]:
    try:
        data = request.data  # a malformed body raises ParseError here: 400 malformed_json
    except RecursionError:
        raise InvalidInput(
            f"The request body is nested more than {MAX_JSON_DEPTH} levels deep.",
            code="malformed_json",
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput("The request body must be a JSON object.", code="invalid_body")
    _check_json(data)
    return data


def actor(request: Request) -> Actor:
    if is_runtime(request):
        return Actor(key=request.auth)
    return Actor(user=request.user)


def instance_for(request: Request, instance_id: Any) -> TaskInstance:
    if is_runtime(request):
        return services.instance_for_runtime(instance_id, request.auth)
    return services.instance_for_principal(instance_id, request.user)


# --- documentation-only shapes (validation itself happens in the services) -----------------


class SlotIn(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField(required=False)
    value_type = serializers.ChoiceField(
        choices=["string", "number", "boolean", "date", "json"], required=False
    )
    choices = serializers.ListField(child=serializers.JSONField(), required=False)
    scope_order = serializers.ListField(child=serializers.CharField(), required=False)
    suggested_risk = serializers.ChoiceField(
        choices=["unclassified", "cosmetic", "reversible", "policy", "irreversible"],
        required=False,
    )


class DecisionIn(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField(required=False)
    slots = serializers.ListField(child=serializers.CharField())


class TaskClassIn(serializers.Serializer):
    name = serializers.CharField(required=False)
    slots = SlotIn(many=True, required=False)
    decisions = DecisionIn(many=True, required=False)


class BeliefIn(serializers.Serializer):
    slot = serializers.CharField()
    value = serializers.JSONField()
    source = serializers.ChoiceField(choices=["user", "tool", "inference", "default"])
    turn = serializers.IntegerField(min_value=0, required=False)
    world_ref = serializers.DictField(required=False, allow_null=True)


class InstanceIn(serializers.Serializer):
    task_class = serializers.CharField()
    principal = serializers.CharField(help_text="the username of the end user")
    world = serializers.DictField(required=False)
    beliefs = BeliefIn(many=True, required=False)


class WorldIn(serializers.Serializer):
    world = serializers.DictField(help_text="{slot_key: {...}} the world now, per slot")


class CancelIn(serializers.Serializer):
    reason = serializers.CharField(required=False)


class RespondIn(serializers.Serializer):
    action = serializers.ChoiceField(choices=["confirm", "edit", "answer", "reject", "veto"])
    version = serializers.IntegerField(help_text="the prompt version you saw")
    value = serializers.JSONField(required=False, help_text="for edit and answer")
    value_confirmation = serializers.JSONField(
        required=False, help_text="the value typed a second time, for a scope escalation"
    )
    reason = serializers.CharField(required=False, help_text="for reject and veto")


class ErrorOut(serializers.Serializer):
    error = serializers.CharField()
    detail = serializers.CharField()
    fields = serializers.DictField()


ERRORS = {400: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut}


# --- views ---------------------------------------------------------------------------------


class TaskClassApi(APIView):
    def get_permissions(self) -> list[Any]:
        return [IsRuntime()] if self.request.method == "PUT" else super().get_permissions()

    @extend_schema(responses={200: dict, **ERRORS}, summary="A task class with effective risks")
    def get(self, request: Request, key: str) -> Response:
        return Response(selectors.task_class_payload(selectors.task_class_with_slots(key)))

    @extend_schema(
        request=TaskClassIn, responses={200: dict, **ERRORS}, summary="Register or update"
    )
    def put(self, request: Request, key: str) -> Response:
        data = body(request)
        unknown = sorted(set(data) - {"name", "slots", "decisions", "key"})
        if unknown:
            raise InvalidInput(
                f"{unknown[0]}: unknown field", fields={unknown[0]: ["unknown field"]}
            )
        if "key" in data and data["key"] != key:
            raise InvalidInput("key: differs from the key in the URL", fields={"key": ["differs"]})
        services.task_class_register(
            key=key,
            name=data.get("name"),
            slots=data.get("slots", []),
            decisions=data.get("decisions", []),
            actor=actor(request),
        )
        return Response(selectors.task_class_payload(selectors.task_class_with_slots(key)))


class InstanceCreateApi(APIView):
    permission_classes = [IsRuntime]

    @extend_schema(
        request=InstanceIn,
        responses={201: dict, 200: dict, **ERRORS},
        summary="Open an instance",
        description="With an `Idempotency-Key`, a repeat with the same body returns the first "
        "instance (200); the same key with another body is refused (409).",
        parameters=[OpenApiParameter(idempotency.HEADER, str, OpenApiParameter.HEADER)],
    )
    def post(self, request: Request) -> Response:
        data = body(request)
        unknown = sorted(set(data) - {"task_class", "principal", "world", "beliefs"})
        if unknown:
            raise InvalidInput(
                f"{unknown[0]}: unknown field", fields={unknown[0]: ["unknown field"]}
            )
        opened = idempotency.instance_open_idempotent(
            data=data, key=request.headers.get(idempotency.HEADER), actor=actor(request)
        )
        return Response(
            selectors.instance_payload(opened.instance),
            status=status.HTTP_200_OK if opened.replayed else status.HTTP_201_CREATED,
            headers={"Idempotent-Replayed": "true"} if opened.replayed else None,
        )


class InstanceDetailApi(APIView):
    @extend_schema(
        responses={200: dict, 304: None, **ERRORS},
        summary="An instance, its plan and prompts",
        description="Sends an `ETag`; with `If-None-Match` naming it, 304 and no body.",
        parameters=[OpenApiParameter("If-None-Match", str, OpenApiParameter.HEADER)],
    )
    def get(self, request: Request, instance_id: str) -> Response:
        return conditional_response(
            request, selectors.instance_payload(instance_for(request, instance_id))
        )


class BeliefCreateApi(APIView):
    permission_classes = [IsRuntime]

    @extend_schema(request=BeliefIn, responses={201: dict, **ERRORS}, summary="Record a belief")
    def post(self, request: Request, instance_id: str) -> Response:
        instance = instance_for(request, instance_id)
        belief = services.belief_record(instance=instance, data=body(request), actor=actor(request))
        return Response(
            {
                "id": belief.pk,
                "instance": str(belief.instance_id),
                "slot": belief.slot.key,
                "value": belief.value,
                "source": belief.source,
                "turn": belief.turn,
                "acquired_at": belief.acquired_at.isoformat(),
                "world_ref": belief.world_ref,
                "status": belief.status,
            },
            status=status.HTTP_201_CREATED,
        )


class WorldApi(APIView):
    permission_classes = [IsRuntime]

    @extend_schema(request=WorldIn, responses={200: dict, **ERRORS}, summary="Replace the world")
    def put(self, request: Request, instance_id: str) -> Response:
        instance = instance_for(request, instance_id)
        data = body(request)
        world = data["world"] if set(data) == {"world"} else data
        instance = services.instance_set_world(instance=instance, world=world, actor=actor(request))
        return Response(selectors.instance_payload(instance))


class PlanApi(APIView):
    permission_classes = [IsRuntime]

    @extend_schema(request=None, responses={200: dict, **ERRORS}, summary="Plan (idempotent)")
    def post(self, request: Request, instance_id: str) -> Response:
        instance = instance_for(request, instance_id)
        instance = services.instance_plan(instance=instance, actor=actor(request))
        return Response(selectors.plan_payload(instance))


class CancelApi(APIView):
    permission_classes = [IsRuntime]

    @extend_schema(request=CancelIn, responses={200: dict, **ERRORS}, summary="Cancel")
    def post(self, request: Request, instance_id: str) -> Response:
        instance = instance_for(request, instance_id)
        data = body(request) if request.body else {}
        instance = services.instance_cancel(
            instance=instance, actor=actor(request), reason=data.get("reason", "")
        )
        return Response(selectors.instance_payload(instance))


class PromptListApi(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        parameters=[OpenApiParameter("state", str, enum=list(PromptState.values))],
        responses={200: dict, **ERRORS},
        summary="Your own prompts",
    )
    def get(self, request: Request) -> Response:
        state = request.query_params.get("state")
        if state and state not in PromptState.values:
            raise InvalidInput(
                f"state: must be one of {', '.join(PromptState.values)}",
                fields={"state": ["unknown state"]},
            )
        prompts = selectors.prompts_for_user(request.user, state)
        page = self.paginator.paginate_queryset(prompts, request, view=self)
        return self.paginator.get_paginated_response([selectors.prompt_detail(p) for p in page])

    @property
    def paginator(self) -> Any:
        if not hasattr(self, "_paginator"):
            from rest_framework.pagination import LimitOffsetPagination

            self._paginator = LimitOffsetPagination()
        return self._paginator


class RespondApi(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        request=RespondIn,
        responses={200: dict, **ERRORS},
        summary="Answer one of your prompts",
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER)],
    )
    def post(self, request: Request, prompt_id: int) -> Response:
        data = body(request)
        key = request.headers.get("Idempotency-Key") or None
        if key is not None and len(key) > 200:
            raise InvalidInput(
                "Idempotency-Key: at most 200 characters",
                fields={"Idempotency-Key": ["at most 200 characters"]},
            )
        result = services.prompt_respond(
            prompt_id=prompt_id,
            user=request.user,
            action=data.get("action"),
            version=data.get("version"),
            value=data.get("value"),
            value_confirmation=data.get("value_confirmation"),
            reason=data.get("reason", ""),
            idempotency_key=key,
        )
        prompt = selectors.prompts_for_user(request.user).get(pk=result.prompt.pk)
        return Response(
            {
                "prompt": selectors.prompt_detail(prompt),
                "instance": selectors.instance_payload(result.instance),
                "replayed": result.replayed,
            }
        )


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return JsonResponse({"status": "ok"})
