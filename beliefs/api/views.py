"""The runtime and person API. Each view validates its input with a serializer, checks who is
asking, calls one service and answers with a documented body; every rule lives in the services.

An operation's docstring is its description in the OpenAPI document (`schema.AutoSchema`), so
it is written for the runtimes' developers who read that document.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, cast
from uuid import UUID

from django.contrib.auth.models import User
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from beliefs import schemas, selectors
from beliefs.api import serializers as s
from beliefs.api.auth import IsPerson, IsRuntime, is_runtime
from beliefs.api.conditional import conditional_response, json_response
from beliefs.errors import InvalidInput, NotFound
from beliefs.models import RuntimeAPIKey, TaskInstance
from beliefs.selectors.shapes import (
    ApprovalJSON,
    BeliefJSON,
    RedeemJSON,
    RespondJSON,
    WorldDiffJSON,
)
from beliefs.services import idempotency
from beliefs.services.access import instance_for_principal, instance_for_runtime
from beliefs.services.approvals import (
    approver_mark_away,
    instance_approve,
    instance_reject_approval,
)
from beliefs.services.audit import Actor
from beliefs.services.instances import (
    belief_record,
    instance_cancel,
    instance_open,
    instance_set_world,
)
from beliefs.services.planning import instance_plan_for_runtime
from beliefs.services.receipts import receipt_redeem
from beliefs.services.responses import prompt_respond
from beliefs.services.task_classes import (
    slot_retire,
    task_class_register,
    task_class_share,
    task_class_unshare,
)

MAX_IDEMPOTENCY_KEY_LENGTH = idempotency.MAX_IDEMPOTENCY_KEY_LENGTH

# --- helpers -------------------------------------------------------------------------------


def validated(serializer: type[serializers.Serializer], data: Any, **context: Any) -> Any:
    """The serializer's validated data; raises ValidationError (a 400 naming the field)."""
    if not isinstance(data, dict):
        raise InvalidInput("The request body must be a JSON object.", code="invalid_body")
    checked = serializer(data=data, context=context)
    checked.is_valid(raise_exception=True)
    return checked.validated_data


def validated_body(data: Any) -> dict[str, Any]:
    """The JSON body as an object (the serializer has already refused anything else)."""
    assert isinstance(data, dict)
    return data


def query(
    serializer: type[serializers.Serializer],
    request: Request,
    only: Iterable[str] | None = None,
) -> Any:
    """Validated query parameters (all of them, or `only` these): the last value of each."""
    params = request.query_params
    names = params.keys() if only is None else [name for name in only if name in params]
    return validated(serializer, {name: params.get(name) for name in names})


def runtime_key(request: Request) -> RuntimeAPIKey:
    assert isinstance(request.auth, RuntimeAPIKey)  # behind IsRuntime, or checked by is_runtime
    return request.auth


def person(request: Request) -> User:
    assert isinstance(request.user, User)  # behind IsPerson: a signed-in person
    return request.user


def actor(request: Request) -> Actor:
    if is_runtime(request):
        return Actor(key=runtime_key(request))
    return Actor(user=person(request))


def instance_for(request: Request, instance_id: Any) -> TaskInstance:
    if is_runtime(request):
        return instance_for_runtime(instance_id, runtime_key(request))
    return instance_for_principal(instance_id, person(request))


def errors(*codes: int) -> dict[int, Any]:
    """The error responses an operation documents, each with the JSON error body."""
    described = {
        400: "Bad input: `fields` names each field and what is wrong with it",
        401: "No credentials, or unknown ones",
        403: "Not allowed for this caller",
        404: "No such resource, or not yours",
        409: "Conflicts with the current state (`prompt` holds the fresh prompt, if any)",
        413: "The body is too large",
        415: "The body is not JSON",
        422: "An Idempotency-Key sent again with a different request",
        503: (
            "The database was busy with competing changes (`busy`; nothing was recorded) or out "
            "of reach (`database_unavailable`); try again after `Retry-After` seconds"
        ),
    }
    return {
        code: OpenApiResponse(s.ConflictOut if code in (409, 422) else s.ErrorOut, described[code])
        for code in (400, 401, 403, 404, *codes)
    }


READS = errors(503)
WRITES = errors(409, 413, 415, 503)


def read_schema(answer: Any, **described: Any) -> Any:
    """The OpenAPI description of a read: its answer and the errors any read may meet;
    `described` is the rest (summary, parameters)."""
    return extend_schema(responses={200: answer, **READS}, **described)


def write_schema(
    body: type[serializers.Serializer], answer: Any, *, status: int = 200, **described: Any
) -> Any:
    """The OpenAPI description of a write: its body, its answer with `status`, and the errors
    any write may meet; `described` is the rest (summary, description, parameters)."""
    return extend_schema(request=body, responses={status: answer, **WRITES}, **described)


def action_schema(answer: Any, **described: Any) -> Any:
    """The OpenAPI description of an action that takes no body: its answer, and besides the
    errors of a read a conflict with the state the resource is in (409)."""
    return extend_schema(request=None, responses={200: answer, **errors(409, 503)}, **described)


# --- task classes --------------------------------------------------------------------------


class TaskClassListApi(APIView):
    @read_schema(
        s.TaskClassSummaryPageOut,
        parameters=[schemas.PageQuery],
        summary="The task classes you may use, newest change first (runtimes and people)",
        operation_id="task_classes_list",
    )
    def get(self, request: Request) -> Response:
        """A runtime lists the classes it owns, those shared with it and those nobody owns
        yet; a signed-in person lists every class. Each names its slots and which of them no
        classifier has decided yet (irreversible until one does)."""
        query(schemas.PageQuery, request)
        reader = runtime_key(request).runtime if is_runtime(request) else None
        paginator = LimitOffsetPagination()
        found = selectors.task_classes_for(reader)
        page = paginator.paginate_queryset(found, request, view=self) or []
        return paginator.get_paginated_response(
            [selectors.task_class_summary(c, reader) for c in page]
        )


class TaskClassApi(APIView):
    def get_permissions(self) -> list[Any]:
        return [IsRuntime()] if self.request.method == "PUT" else list(super().get_permissions())

    @read_schema(
        s.TaskClassOut, summary="A task class with its slots' effective risks (runtimes and people)"
    )
    def get(self, request: Request, key: str) -> Response:
        """A runtime reads the classes it owns, those shared with it and those nobody owns yet;
        any other answers 404, as for no such class. A signed-in person reads any."""
        reader = runtime_key(request).runtime if is_runtime(request) else None
        found = selectors.task_class_with_slots(key, reader=reader)
        return Response(selectors.task_class_payload(found))

    @write_schema(
        schemas.TaskClassIn, s.TaskClassOut, summary="Register or update a task class (runtimes)"
    )
    def put(self, request: Request, key: str) -> Response:
        """Adds slots and decisions and links slots to decisions. Fields left out of a later
        registration keep their values; decision links are never dropped. Risk classes are
        refused: classifiers set them (`suggested_risk` is a hint). A class holds at most
        CONSOLE_MAX_SLOTS_PER_TASK_CLASS slots (300) and CONSOLE_MAX_DECISIONS_PER_TASK_CLASS
        decisions (100): more is refused with 400 `limit_exceeded`."""
        data = validated(schemas.TaskClassIn, request.data, key=key)
        task_class_register(
            key=key,
            name=data.get("name"),
            slots=data.get("slots", []),
            decisions=data.get("decisions", []),
            open_slots=data.get("open_slots"),
            subject_key=data.get("subject_key"),
            actor=actor(request),
        )
        return Response(selectors.task_class_payload(selectors.task_class_with_slots(key)))


class SlotRetireApi(APIView):
    permission_classes = [IsRuntime]

    @action_schema(s.TaskClassOut, summary="Retire a slot of your task class (its owner)")
    def post(self, request: Request, key: str, slot: str) -> Response:
        """A retired slot is no longer planned: open instances drop its prompt at their next plan,
        and no new action may name it. Its history stays. Idempotent; audited."""
        task_class = selectors.task_class_for_owner(key, runtime_key(request).runtime_id)
        found = task_class.slots.filter(key=slot).first()
        if found is None:
            raise NotFound(f"No slot {slot!r} in {key!r}.", code="unknown_slot")
        slot_retire(slot=found, actor=actor(request))
        return Response(selectors.task_class_payload(selectors.task_class_with_slots(key)))


class TaskClassSharesApi(APIView):
    permission_classes = [IsRuntime]

    @read_schema(s.ShareListOut, summary="Whom a task class is shared with (its owner)")
    def get(self, request: Request, key: str) -> Response:
        """Another runtime opens instances of a class only when its owner shares it; values stay
        with the runtime that reported them unless the share has `history`."""
        task_class = selectors.task_class_for_owner(key, runtime_key(request).runtime_id)
        return Response(selectors.shares_payload(task_class))


class TaskClassShareApi(APIView):
    permission_classes = [IsRuntime]

    @write_schema(
        schemas.ShareIn, s.ShareOut, summary="Share a task class with another runtime (its owner)"
    )
    def put(self, request: Request, key: str, runtime: str) -> Response:
        """That runtime may then open instances of the class. Its instances carry only its own
        earlier values, unless `history` is true: then it joins the class's history pool, and the
        owner and every runtime in the pool carry each other's values for the class's people
        (turn it on only for a runtime you trust as much as your own). Idempotent; a change is
        audited."""
        task_class = selectors.task_class_for_owner(key, runtime_key(request).runtime_id)
        data = validated(schemas.ShareIn, request.data)
        share = task_class_share(
            task_class=task_class,
            runtime_name=runtime,
            history=data["history"],
            actor=actor(request),
        )
        return Response(selectors.share_payload(share))

    @extend_schema(
        request=None,
        responses={204: None, **READS},
        summary="Stop sharing a task class with a runtime (its owner)",
    )
    def delete(self, request: Request, key: str, runtime: str) -> Response:
        """The runtime's existing instances stay its own; it opens no new ones."""
        task_class = selectors.task_class_for_owner(key, runtime_key(request).runtime_id)
        task_class_unshare(task_class=task_class, runtime_name=runtime, actor=actor(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- instances -----------------------------------------------------------------------------


class InstanceCreateApi(APIView):
    permission_classes = [IsRuntime]

    @read_schema(
        s.InstanceSummaryPageOut,
        parameters=[schemas.InstanceQuery],
        summary="Your runtime's instances, newest first (runtimes)",
        operation_id="instances_list",
    )
    def get(self, request: Request) -> Response:
        """The instances your runtime opened (through any of its keys), newest first, `limit`
        (at most 1000) from `offset`; `status` and `principal` (a username) narrow them. Read
        one whole at its own URL."""
        filters = query(schemas.InstanceQuery, request)
        found = selectors.instances_of_runtime(
            runtime_key(request).runtime_id,
            status=filters.get("status"),
            principal=filters.get("principal"),
        )
        paginator = LimitOffsetPagination()
        page = paginator.paginate_queryset(found, request, view=self) or []
        return paginator.get_paginated_response([selectors.instance_summary(i) for i in page])

    @extend_schema(
        request=schemas.InstanceIn,
        responses={201: s.InstanceOut, 200: s.InstanceOut, **WRITES},
        summary="Open an instance for a person (runtimes)",
        parameters=[
            OpenApiParameter(
                idempotency.HEADER,
                {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": idempotency.MAX_IDEMPOTENCY_KEY_LENGTH,
                    "pattern": r"^\S.*$|^.*\S$",
                },
                OpenApiParameter.HEADER,
                description="the same key and body again returns the first instance",
            ),
            OpenApiParameter(
                "Idempotent-Replayed",
                {"type": "string", "enum": ["true"]},
                OpenApiParameter.HEADER,
                description="`true` when this is the instance a request with the same key opened",
                response=[200],
            ),
        ],
    )
    def post(self, request: Request) -> Response:
        """A new run of the task class for `principal`, with the world as the runtime sees it and
        any beliefs it already holds. 404 names an unknown task class or principal. 400
        `unknown_audience` when `audience` is neither your runtime's name nor one registered
        for it (in the console's admin); nothing is stored then. 409
        `too_many_open_instances` when the person already has CONSOLE_MAX_OPEN_INSTANCES (50)
        open instances from this runtime. With an `Idempotency-Key`, a repeat with the same body
        returns the first instance (200, `Idempotent-Replayed: true`); the same key with another
        body is refused (409)."""
        data = validated(schemas.InstanceIn, request.data)

        def open_() -> TaskInstance:
            return instance_open(
                task_class_key=data["task_class"],
                principal=data["principal"],
                world=data.get("world"),
                beliefs=data.get("beliefs", []),
                slots=data.get("slots"),
                audience=data.get("audience") or "",
                actor=actor(request),
            )

        opened = idempotency.instance_open_idempotent(
            body=validated_body(request.data),
            open_=open_,
            key=request.headers.get(idempotency.HEADER),
            actor=actor(request),
        )
        return Response(
            selectors.instance_payload(opened.instance),
            status=status.HTTP_200_OK if opened.replayed else status.HTTP_201_CREATED,
            headers={"Idempotent-Replayed": "true"} if opened.replayed else None,
        )


class InstanceDetailApi(APIView):
    @extend_schema(
        responses={200: s.InstanceOut, 304: None, **READS},
        summary="An instance, its plan, prompts and (once ready) final bindings",
        parameters=[
            OpenApiParameter("If-None-Match", str, OpenApiParameter.HEADER),
            OpenApiParameter(
                "ETag",
                str,
                OpenApiParameter.HEADER,
                description="the body's tag: send it back in If-None-Match",
                response=[200, 304],
            ),
            OpenApiParameter(
                "Preference-Applied",
                str,
                OpenApiParameter.HEADER,
                description="`wait=N` when the answer waited as `Prefer: wait=N` asked",
                response=[200, 304],
            ),
            OpenApiParameter(
                "Prefer",
                str,
                OpenApiParameter.HEADER,
                description="`wait=N`: wait up to N seconds (at most 60) for a change.",
            ),
        ],
    )
    def get(self, request: Request, instance_id: UUID) -> HttpResponse:
        """For the runtime that opened it and for its principal; 404 for anyone else. Sends an
        `ETag`; with `If-None-Match` naming it, 304 and no body.

        A long-poll: with `Prefer: wait=N` (RFC 7240; N seconds, at most 60) as well, the answer
        waits until the instance's ETag changes (200 and the new body) or N seconds pass (304),
        and carries `Preference-Applied: wait=N`. An invalid `Prefer` is ignored."""
        if is_runtime(request):
            read = selectors.instance_read(instance_id, runtime_id=runtime_key(request).runtime_id)
        else:
            read = selectors.instance_read(instance_id, principal_id=person(request).pk)
        if read is None or read.expiry_due:
            # Not theirs (404), or to expire first: the services' way, rare.
            payload = selectors.instance_payload(instance_for(request, instance_id))
        else:
            payload = read.payload
        return conditional_response(request, payload)


class BeliefCreateApi(APIView):
    permission_classes = [IsRuntime]

    @write_schema(
        schemas.BeliefIn, s.BeliefOut, status=201, summary="Record a belief for a slot (runtimes)"
    )
    def post(self, request: Request, instance_id: str) -> Response:
        """Supersedes the slot's active belief of this instance and re-plans a planned instance. A
        slot nobody declared is registered, unclassified (so irreversible)."""
        instance = instance_for(request, instance_id)
        belief = belief_record(
            instance=instance,
            belief=validated(schemas.BeliefIn, request.data),
            actor=actor(request),
        )
        recorded: BeliefJSON = {
            "id": belief.pk,
            "instance": str(belief.instance_id),
            "slot": belief.slot.key,
            "value": belief.value,
            "source": belief.source,
            "turn": belief.turn,
            "acquired_at": belief.acquired_at.isoformat(),
            "world_ref": belief.world_ref,
            "status": belief.status,
        }
        return Response(recorded, status=status.HTTP_201_CREATED)


def instance_change_api(
    method: str,
    body: type[serializers.Serializer],
    change: Callable[[TaskInstance, Any, Actor], TaskInstance],
    *,
    summary: str,
    description: str,
) -> type[APIView]:
    """A view for a runtime's change to an open instance it opened: the body validated with
    `body`, one service called by `change`, the instance as it now is in answer."""

    @write_schema(body, s.InstanceOut, summary=summary, description=description)
    def handle(self: APIView, request: Request, instance_id: str) -> Response:
        instance = instance_for(request, instance_id)
        data = validated(body, request.data)
        return Response(selectors.instance_payload(change(instance, data, actor(request))))

    return type(
        "InstanceChangeApi", (APIView,), {"permission_classes": [IsRuntime], method: handle}
    )


WorldApi = instance_change_api(
    "put",
    schemas.WorldIn,
    lambda instance, data, by: instance_set_world(instance=instance, world=data["world"], actor=by),
    summary="Replace the world of an open instance (runtimes)",
    description="Prompts whose world diff changed get a new version.",
)


class PlanApi(APIView):
    permission_classes = [IsRuntime]

    @action_schema(s.PlanOut, summary="Plan an instance (runtimes; idempotent)")
    def post(self, request: Request, instance_id: str) -> HttpResponse:
        """Routes every slot and opens a prompt for each SURFACED, CONFIRM and ASK slot. A ready
        instance keeps its final plan. No body."""
        planned = instance_plan_for_runtime(instance_id=instance_id, key=runtime_key(request))
        payload = selectors.plan_payload(planned.instance, planned.items)
        # Where planning encoded the plan for its digest, the answer writes that text.
        encoded = {"items": planned.text} if planned.text is not None else None
        return json_response(request, payload, encoded)


CancelApi = instance_change_api(
    "post",
    schemas.CancelIn,
    lambda instance, data, by: instance_cancel(
        instance=instance, actor=by, reason=data.get("reason") or ""
    ),
    summary="Cancel an instance (runtimes)",
    description="The body is optional; an instance already cancelled stays so.",
)


# --- prompts -------------------------------------------------------------------------------


class PromptListApi(APIView):
    permission_classes = [IsPerson]

    @read_schema(
        s.PromptPageOut,
        parameters=[schemas.PromptQuery],
        summary="Your own prompts, newest first (people)",
    )
    def get(self, request: Request) -> Response:
        filters = query(schemas.PromptQuery, request)
        prompts = selectors.prompts_for_user(person(request), filters.get("state"))
        paginator = LimitOffsetPagination()
        page = paginator.paginate_queryset(prompts, request, view=self) or []
        return paginator.get_paginated_response([selectors.prompt_detail(p) for p in page])


class RespondApi(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        request=schemas.RespondIn,
        responses={200: s.RespondOut, **WRITES, **errors(422)},
        summary="Answer one of your prompts (the principal only)",
        parameters=[
            OpenApiParameter(
                "Idempotency-Key",
                str,
                OpenApiParameter.HEADER,
                description=f"at most {MAX_IDEMPOTENCY_KEY_LENGTH} characters",
            )
        ],
    )
    def post(self, request: Request, prompt_id: int) -> Response:
        """CONFIRM prompts take confirm, edit or reject; ASK prompts answer or reject; SURFACED
        prompts veto. A response to an older version is refused with 409 and the fresh prompt; an
        identical repeat is answered again (`replayed`) and writes nothing. An `Idempotency-Key`
        sent again returns the first answer, and is refused (422) with a different action, value,
        reason or version. A confirm of an irreversible value whose world diff shows changes
        names each changed key in `acknowledged`, and while your recent confirmations look
        habitual (fast, every value kept) it carries the value's last 4 characters in
        `typed_tail`; without them it is refused (400 `not_acknowledged` or `tail_not_typed`). An
        edit to the value on record is recorded as a confirm. A value that changes the value on
        record of an irreversible prompt (an edit of a CONFIRM, or an answer to an ASK that
        differs from the earlier value in its `context_value`) is sent twice: `value_confirmation`
        must equal `value`, else it is refused (400 `edit_not_repeated`) and nothing is
        recorded. A first answer to an ASK with no `context_value` is sent once."""
        data = validated(schemas.RespondIn, request.data)
        key = request.headers.get("Idempotency-Key") or None
        if key is not None and len(key) > MAX_IDEMPOTENCY_KEY_LENGTH:
            raise InvalidInput(
                f"Idempotency-Key: at most {MAX_IDEMPOTENCY_KEY_LENGTH} characters",
                fields={"Idempotency-Key": [f"at most {MAX_IDEMPOTENCY_KEY_LENGTH} characters"]},
            )
        result = prompt_respond(
            prompt_id=prompt_id,
            user=person(request),
            action=data["action"],
            version=data["version"],
            value=data.get("value"),
            value_confirmation=data.get("value_confirmation"),
            reason=data["reason"],
            idempotency_key=key,
            acknowledged=data["acknowledged"],
            typed_tail=data.get("typed_tail"),
        )
        prompt = selectors.prompts_for_user(person(request)).get(pk=result.prompt.pk)
        answer: RespondJSON = {
            "prompt": selectors.prompt_detail(prompt),
            "instance": selectors.instance_payload(result.instance),
            "replayed": result.replayed,
        }
        return Response(answer)


# --- M-of-N approval ------------------------------------------------------------------------


def _approval_body(instance: TaskInstance, replayed: bool = False) -> ApprovalJSON:
    return {
        "instance": str(instance.pk),
        "status": instance.status,
        "status_reason": instance.status_reason or None,
        "bindings": instance.bindings,
        "bindings_digest": instance.bindings_digest or None,
        "worlds_digest": instance.worlds_digest or None,
        "worlds": [
            {
                "slot": shown.slot,
                "label": shown.label,
                "world_ref": shown.world_ref,
                "changes": [cast(WorldDiffJSON, d.as_data()) for d in shown.changes],
                "acknowledge": shown.keys,
            }
            for shown in selectors.bound_world_changes(instance)
        ],
        "quorum": selectors.quorum_payload(instance),
        "replayed": replayed,
    }


class ApprovalApi(APIView):
    permission_classes = [IsPerson]

    @extend_schema(
        responses={200: s.ApprovalOut, **errors(404)},
        summary="An action waiting for your approval (its approvers and its principal)",
    )
    def get(self, request: Request, instance_id: UUID) -> Response:
        instance = selectors.instance_for_approver(instance_id, person(request))
        if instance is None:
            raise NotFound("No such instance.")
        return Response(_approval_body(instance))

    @write_schema(
        schemas.ApprovalIn,
        s.ApprovalOut,
        summary="Approve, reject or mark another approver away (approvers only)",
    )
    def post(self, request: Request, instance_id: UUID) -> Response:
        """For the exact `bindings_digest` you saw (409 `stale_digest` after an edit). Approving
        again counts once (`replayed`). The first rejection cancels the instance with its reason.
        Marking another member away stops asking them; it is not an approval. A runtime key never
        may (403); someone not among the approvers gets 403 `not_an_approver`, an outsider 404."""
        data = validated(schemas.ApprovalIn, request.data)
        user = person(request)
        digest, worlds = data["bindings_digest"], data.get("worlds_digest")
        if data["action"] == "approve":
            result = instance_approve(
                instance_id=instance_id,
                user=user,
                bindings_digest=digest,
                worlds_digest=worlds,
                acknowledged=data.get("acknowledged") or [],
            )
            return Response(_approval_body(result.instance, result.replayed))
        if data["action"] == "reject":
            instance = instance_reject_approval(
                instance_id=instance_id,
                user=user,
                bindings_digest=digest,
                worlds_digest=worlds,
                reason=data.get("reason"),
            )
            return Response(_approval_body(instance))
        approver_mark_away(
            instance_id=instance_id,
            user=user,
            approver=data.get("approver"),
            bindings_digest=digest,
            worlds_digest=worlds,
            reason=data.get("reason") or "",
        )
        found = selectors.instance_for_approver(instance_id, user)
        assert found is not None  # the service found it just now
        return Response(_approval_body(found))


# --- receipts ------------------------------------------------------------------------------


class ReceiptRedeemApi(APIView):
    permission_classes = [IsRuntime]

    @write_schema(schemas.RedeemIn, s.RedeemOut, summary="Redeem a receipt, once (runtimes)")
    def post(self, request: Request) -> Response:
        """Before executing an approved action, a tool server (through the runtime's key) redeems
        its receipt: 200 the first time; 409 `receipt_redeemed` after that, 409 `receipt_revoked`
        once the person vetoed after ready or the instance was cancelled; 400 `receipt_invalid`
        (not signed by this console), `receipt_expired`, or `digest_mismatch` (the
        `bindings_digest` given is not the receipt's); 404 for another runtime's receipt. One
        redemption per receipt is a database rule."""
        data = validated(schemas.RedeemIn, request.data)
        redeemed = receipt_redeem(
            token=data["receipt"],
            key=runtime_key(request),
            bindings_digest=data.get("bindings_digest"),
        )
        receipt = redeemed.receipt
        assert receipt.redeemed_at is not None
        answer: RedeemJSON = {
            "jti": str(receipt.jti),
            "instance": str(redeemed.instance_id),
            "bindings_digest": receipt.bindings_digest,
            "redeemed_at": receipt.redeemed_at.isoformat(),
        }
        return Response(answer)
