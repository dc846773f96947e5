from __future__ import annotations

from csp.decorators import csp_update
from django.contrib.auth.decorators import login_not_required
from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from beliefs.api import proposals as proposal_views
from beliefs.api import views
from beliefs.api import webhooks as webhook_views

# The API authenticates by itself (runtime key or session) and answers JSON, so Django's
# LoginRequiredMiddleware, which redirects to the sign-in page, must leave it alone.
api = login_not_required

urlpatterns = [
    path("task-classes/<str:key>/", api(views.TaskClassApi.as_view()), name="api-task-class"),
    path("instances/", api(views.InstanceCreateApi.as_view()), name="api-instances"),
    path(
        "instances/<uuid:instance_id>/",
        api(views.InstanceDetailApi.as_view()),
        name="api-instance",
    ),
    path(
        "instances/<uuid:instance_id>/beliefs/",
        api(views.BeliefCreateApi.as_view()),
        name="api-beliefs",
    ),
    path("instances/<uuid:instance_id>/world/", api(views.WorldApi.as_view()), name="api-world"),
    path("instances/<uuid:instance_id>/plan/", api(views.PlanApi.as_view()), name="api-plan"),
    path("instances/<uuid:instance_id>/cancel/", api(views.CancelApi.as_view()), name="api-cancel"),
    path("prompts/", api(views.PromptListApi.as_view()), name="api-prompts"),
    path(
        "prompts/<int:prompt_id>/respond/",
        api(views.RespondApi.as_view()),
        name="api-respond",
    ),
    path("proposals/", api(proposal_views.ProposalListApi.as_view()), name="api-proposals"),
    path(
        "proposals/validate/",
        api(proposal_views.ProposalValidateApi.as_view()),
        name="api-proposals-validate",
    ),
    path(
        "proposals/contract-schema/",
        api(proposal_views.ContractSchemaApi.as_view()),
        name="api-proposals-contract-schema",
    ),
    path(
        "webhook-endpoints/",
        api(webhook_views.EndpointListApi.as_view()),
        name="api-webhook-endpoints",
    ),
    path(
        "webhook-endpoints/<int:endpoint_id>/",
        api(webhook_views.EndpointDetailApi.as_view()),
        name="api-webhook-endpoint",
    ),
    path(
        "webhook-endpoints/<int:endpoint_id>/rotate-secret/",
        api(webhook_views.EndpointRotateApi.as_view()),
        name="api-webhook-endpoint-rotate",
    ),
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
