"""The proposal endpoints: runtimes (and people) submit, reviewers read.

Who may do what, decided here:
- ``POST proposals/validate/``: any authenticated caller, runtime key or signed-in person, so a
  reviewer can also try a proposal by hand.
- ``GET proposals/contract-schema/``: any authenticated caller; it is the structured-output
  schema that a runtime hands its model.
- ``GET proposals/``: reviewers only. A runtime submits but never reads other runs' proposals
  back (403), and neither do people without the reviewer role.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, permissions, serializers, status
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from beliefs.api.auth import is_runtime
from beliefs.api.views import ERRORS, actor
from beliefs.domain.contract import FINDING_CODES, update_json_schema
from beliefs.domain.vocabulary import TRANSITION_POLICIES, VERDICTS
from beliefs.roles import is_reviewer
from beliefs.selectors import proposals as proposal_reads
from beliefs.services import proposals as proposal_writes


class StrictJSONParser(JSONParser):
    """JSON only, and a body nested deeper than Python's recursion limit is a 400, not a 500."""

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - nested too deeply.") from None


class IsReviewer(permissions.BasePermission):
    message = "Only reviewers may read proposal validations."

    def has_permission(self, request: Request, view: Any) -> bool:
        return not is_runtime(request) and is_reviewer(request.user)


class SourceIn(serializers.Serializer):
    provider = serializers.CharField(required=False, max_length=200)
    model = serializers.CharField(required=False, max_length=200)
    run = serializers.CharField(required=False, max_length=200)


class ValidateIn(serializers.Serializer):
    graph = serializers.JSONField(help_text="{nodes: [...], edges: [...]}: the graph before")
    update = serializers.JSONField(
        help_text="the model's proposal; its schema is GET proposals/contract-schema/"
    )
    source = SourceIn(required=False)


class FindingOut(serializers.Serializer):
    code = serializers.ChoiceField(choices=list(FINDING_CODES))
    message = serializers.CharField()
    path = serializers.CharField(help_text="JSON pointer into the proposal")


class ValidateOut(serializers.Serializer):
    id = serializers.IntegerField()
    verdict = serializers.ChoiceField(choices=list(VERDICTS))
    decided_by = serializers.CharField(allow_null=True)
    policy = serializers.ChoiceField(choices=list(TRANSITION_POLICIES))
    declared = serializers.BooleanField(allow_null=True)
    meaningful_change = serializers.BooleanField(allow_null=True)
    counts = serializers.DictField(child=serializers.IntegerField(allow_null=True))
    errors = FindingOut(many=True)
    warnings = FindingOut(many=True)


class ProposalValidateApi(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(
        request=ValidateIn,
        responses={201: ValidateOut, 401: ERRORS[403], **ERRORS},
        summary="Validate a proposal against the contract and store the result",
    )
    def post(self, request: Request) -> Response:
        envelope = proposal_writes.proposal_envelope(request.data)
        validation = proposal_writes.proposal_validate_and_store(
            graph=envelope.graph,
            update=envelope.update,
            source=envelope.source,
            actor=actor(request),
        )
        return Response(
            proposal_reads.validation_result(validation), status=status.HTTP_201_CREATED
        )


class ContractSchemaApi(APIView):
    @extend_schema(responses={200: dict}, summary="The JSON Schema of a proposal's update")
    def get(self, request: Request) -> Response:
        return Response(update_json_schema())


class ProposalListApi(APIView):
    permission_classes = [IsReviewer]

    @extend_schema(
        parameters=[
            OpenApiParameter("verdict", str, enum=list(VERDICTS)),
            OpenApiParameter("code", str, enum=list(FINDING_CODES), description="finding code"),
            OpenApiParameter("provider", str),
            OpenApiParameter("model", str),
            OpenApiParameter("from", str, description="first day, YYYY-MM-DD (inclusive)"),
            OpenApiParameter("to", str, description="last day, YYYY-MM-DD (inclusive)"),
            OpenApiParameter("limit", int),
            OpenApiParameter("offset", int),
        ],
        responses={200: dict, 401: ERRORS[403], **ERRORS},
        summary="Stored validations, newest first (reviewers)",
    )
    def get(self, request: Request) -> Response:
        form = proposal_reads.ProposalFilterForm(request.query_params)
        if not form.is_valid():
            raise proposal_reads.filter_errors(form)
        rows = proposal_reads.validation_rows(
            proposal_reads.validations_filtered(form.cleaned_data)
        )
        paginator = LimitOffsetPagination()
        page = paginator.paginate_queryset(rows, request, view=self)
        return paginator.get_paginated_response(
            [proposal_reads.validation_summary(v) for v in page or []]
        )
