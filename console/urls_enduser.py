from __future__ import annotations

from django.urls import URLPattern, URLResolver, include, path

from console.views import approvals, enduser, live, passkeys

# An instance's page and what its forms post to.
instance_patterns: list[URLPattern | URLResolver] = [
    path("", enduser.instance_detail, name="instance"),
    path("live/", live.instance_live, name="instance-live"),
    path("prompts/<int:prompt_id>/respond/", enduser.prompt_respond, name="prompt-respond"),
    # review and sign with a passkey
    path("sign/", passkeys.instance_review, name="instance-sign"),
    path("sign/reask/", passkeys.instance_reask, name="instance-reask"),
    path("sign/options/", passkeys.instance_sign_options, name="instance-sign-options"),
    path("sign/assertion/", passkeys.instance_sign, name="instance-sign-assertion"),
]
urlpatterns: list[URLPattern | URLResolver] = [
    path("", enduser.inbox, name="inbox"),
    path("inbox/rows/", live.inbox_rows, name="inbox-rows"),
    path("instances/<uuid:instance_id>/", include(instance_patterns)),
    # M-of-N approval: an approver's page of one action.
    path("approvals/<uuid:instance_id>/", approvals.approval_detail, name="approval"),
    path("approvals/<uuid:instance_id>/act/", approvals.approval_act, name="approval-act"),
]
