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

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import permissions, status
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from beliefs import schemas
from beliefs.api import serializers as s
from beliefs.api.auth import is_runtime
from beliefs.api.views import actor, query, read_schema, validated, write_schema
from beliefs.domain.contract import FINDING_CODES, update_json_schema
from beliefs.domain.vocabulary import MAX_LABEL_LENGTH, VERDICTS
from beliefs.roles import is_reviewer
from beliefs.selectors import proposals as proposal_reads
from beliefs.services import proposals as proposal_writes


class IsReviewer(permissions.BasePermission):
    message = "Only reviewers may read proposal validations."

    def has_permission(self, request: Request, view: Any) -> bool:
        return not is_runtime(request) and is_reviewer(request.user)


class ProposalValidateApi(APIView):
    # Inside `graph` and `update` the edge guard names places by JSON pointer, as findings do.
    json_documents = ("graph", "update")

    @write_schema(
        schemas.ValidateIn,
        s.ValidateOut,
        status=201,
        summary="Validate a proposal against the contract and store the result",
    )
    def post(self, request: Request) -> Response:
        """Whatever `graph` and `update` hold is judged and stored: a malformed update is a REJECT
        with schema findings. Only the envelope `{graph, update, source?}` and text that cannot
        be stored are refused (400)."""
        data = validated(schemas.ValidateIn, request.data)
        validation = proposal_writes.proposal_validate_and_store(
            graph=data["graph"],
            update=data["update"],
            source=data.get("source") or {},
            actor=actor(request),
        )
        return Response(
            proposal_reads.validation_result(validation), status=status.HTTP_201_CREATED
        )


class ContractSchemaApi(APIView):
    @read_schema(
        OpenApiResponse(OpenApiTypes.OBJECT, "A JSON Schema (draft 2020-12) document"),
        summary="The JSON Schema of a proposal's update",
    )
    def get(self, request: Request) -> Response:
        """Hand it to a model as its structured-output schema."""
        return Response(update_json_schema())


class ProposalListApi(APIView):
    permission_classes = [IsReviewer]

    @read_schema(
        s.ValidationPageOut,
        parameters=[
            OpenApiParameter("verdict", str, enum=list(VERDICTS)),
            OpenApiParameter("code", str, enum=list(FINDING_CODES), description="finding code"),
            OpenApiParameter("provider", {"type": "string", "maxLength": MAX_LABEL_LENGTH}),
            OpenApiParameter("model", {"type": "string", "maxLength": MAX_LABEL_LENGTH}),
            OpenApiParameter("from", OpenApiTypes.DATE, description="first day (inclusive)"),
            OpenApiParameter("to", OpenApiTypes.DATE, description="last day (inclusive)"),
            schemas.PageQuery,
        ],
        summary="Stored validations, newest first (reviewers)",
    )
    def get(self, request: Request) -> Response:
        query(schemas.PageQuery, request, only=("limit", "offset"))  # the form checks the filters
        form = schemas.ProposalFilterForm(request.query_params)
        if not form.is_valid():
            raise schemas.filter_errors(form)
        rows = proposal_reads.validation_rows(
            proposal_reads.validations_filtered(form.cleaned_data)
        )
        paginator = LimitOffsetPagination()
        page = paginator.paginate_queryset(rows, request, view=self)
        return paginator.get_paginated_response(
            [proposal_reads.validation_summary(v) for v in page or []]
        )
