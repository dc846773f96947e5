from __future__ import annotations

from csp.decorators import csp_update
from django.contrib.auth.decorators import login_not_required
from django.urls import URLPattern, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.views import APIView

from beliefs.api import longpoll, passkeys, proposals, views, webhooks

# The API authenticates by itself (runtime key or session) and answers JSON, so Django's
# LoginRequiredMiddleware, which redirects to the sign-in page, must leave it alone.
api = login_not_required


def api_path(route: str, view: type[APIView], name: str) -> URLPattern:
    """A route to one API view, left alone by the sign-in redirect."""
    return path(route, api(view.as_view()), name=name)


task_class_and_instance_patterns = [
    api_path("task-classes/", views.TaskClassListApi, "api-task-classes"),
    api_path("task-classes/<str:key>/", views.TaskClassApi, "api-task-class"),
    api_path("task-classes/<str:key>/shares/", views.TaskClassSharesApi, "api-task-class-shares"),
    api_path(
        "task-classes/<str:key>/slots/<str:slot>/retire/",
        views.SlotRetireApi,
        "api-slot-retire",
    ),
    api_path(
        "task-classes/<str:key>/shares/<str:runtime>/",
        views.TaskClassShareApi,
        "api-task-class-share",
    ),
    api_path("instances/", views.InstanceCreateApi, "api-instances"),
    # Async, for `Prefer: wait` (a long-poll); the plain read is InstanceDetailApi's.
    path("instances/<uuid:instance_id>/", api(longpoll.instance_detail), name="api-instance"),
    api_path("instances/<uuid:instance_id>/beliefs/", views.BeliefCreateApi, "api-beliefs"),
    api_path("instances/<uuid:instance_id>/world/", views.WorldApi, "api-world"),
    api_path("instances/<uuid:instance_id>/plan/", views.PlanApi, "api-plan"),
    api_path("instances/<uuid:instance_id>/cancel/", views.CancelApi, "api-cancel"),
    api_path("instances/<uuid:instance_id>/approval/", views.ApprovalApi, "api-approval"),
]
receipt_patterns = [
    api_path("receipts/redeem/", views.ReceiptRedeemApi, "api-receipt-redeem"),
    # what a verifier checks a receipt's passkey evidence with
    api_path("people/<str:username>/passkeys/", passkeys.PersonPasskeysApi, "api-person-passkeys"),
]
prompt_patterns = [
    api_path("prompts/", views.PromptListApi, "api-prompts"),
    api_path("prompts/<int:prompt_id>/respond/", views.RespondApi, "api-respond"),
]
proposal_patterns = [
    api_path("proposals/", proposals.ProposalListApi, "api-proposals"),
    api_path("proposals/validate/", proposals.ProposalValidateApi, "api-proposals-validate"),
    api_path(
        "proposals/contract-schema/", proposals.ContractSchemaApi, "api-proposals-contract-schema"
    ),
]
webhook_patterns = [
    api_path("webhook-endpoints/", webhooks.EndpointListApi, "api-webhook-endpoints"),
    api_path(
        "webhook-endpoints/<int:endpoint_id>/", webhooks.EndpointDetailApi, "api-webhook-endpoint"
    ),
    api_path(
        "webhook-endpoints/<int:endpoint_id>/rotate-secret/",
        webhooks.EndpointRotateApi,
        "api-webhook-endpoint-rotate",
    ),
]
urlpatterns = [
    *task_class_and_instance_patterns,
    *prompt_patterns,
    *receipt_patterns,
    *proposal_patterns,
    *webhook_patterns,
    path("schema/", api(SpectacularAPIView.as_view()), name="api-schema"),
    # Swagger UI sets inline styles from its own script: allowed on this page only, for styles
    # only; scripts stay 'self'.
    path(
        "docs/",
        api(
            csp_update({"style-src": ["'unsafe-inline'"]})(
                SpectacularSwaggerSplitView.as_view(url_name="api-schema")
            )
        ),
        name="api-docs",
    ),
]
