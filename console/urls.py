from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.urls import include, path

from console.metrics import metrics
from console.sso import SSOCallbackView, SSOStartView
from console.views import passkeys
from console.views.account import account_page
from console.views.help import glossary
from console.views.insights import insights_page
from console.views.public import healthz, jwks, readyz
from console.views.runtimes import endpoint_send_test, runtimes_page
from console.views.start import SignInView, home

# Signing in, with a password, a passkey or single sign-on, and out.
sign_in = [
    path("login/", SignInView.as_view(), name="login"),
    path("oidc/start/", login_not_required(SSOStartView.as_view()), name="oidc-sign-in"),
    path("oidc/callback/", login_not_required(SSOCallbackView.as_view()), name="oidc-callback"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "login/passkey/options/", passkeys.passkey_sign_in_options, name="passkey-sign-in-options"
    ),
    path("login/passkey/", passkeys.passkey_sign_in, name="passkey-sign-in"),
]

# A person's own account and the passkeys registered on it.
account = [
    path("", account_page, name="account"),
    path("passkeys/options/", passkeys.passkey_registration_options, name="passkey-options"),
    path("passkeys/", passkeys.passkey_add, name="passkey-add"),
    path("passkeys/<int:passkey_id>/remove/", passkeys.passkey_remove, name="passkey-remove"),
]

runtimes = [
    path("", runtimes_page, name="runtimes"),
    path("endpoints/<int:endpoint_id>/test/", endpoint_send_test, name="runtime-endpoint-test"),
]

urlpatterns = [
    path("healthz", login_not_required(healthz), name="healthz"),
    path("readyz", login_not_required(readyz), name="readyz"),
    path("metrics", login_not_required(metrics), name="metrics"),
    path(".well-known/jwks.json", login_not_required(jwks), name="jwks"),
    path("accounts/", include(sign_in)),
    path("api/v1/", include("beliefs.api.urls")),
    path("admin/", admin.site.urls),
    path("account/", include(account)),
    path("runtimes/", include(runtimes)),
    path("", include("console.urls_enduser")),
    path("classify/", include("console.urls_classify")),
    path("proposals/", include("console.urls_proposals")),
    path("start/", home, name="home"),
    path("glossary/", glossary, name="glossary"),
    path("insights/", insights_page, name="insights"),
    path("", include("console.urls_insights")),
]

handler400 = "console.errors.bad_request"
handler403 = "console.errors.permission_denied"
handler404 = "console.errors.page_not_found"
handler500 = "console.errors.server_error"
