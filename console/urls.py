from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.urls import include, path

from console.views import passkeys
from console.views.account import account_page
from console.views.help import glossary
from console.views.insights import insights_page
from console.views.public import healthz, jwks
from console.views.runtimes import endpoint_send_test, runtimes_page
from console.views.start import SignInView, home

urlpatterns = [
    path("healthz", login_not_required(healthz), name="healthz"),
    path(".well-known/jwks.json", login_not_required(jwks), name="jwks"),
    path("accounts/login/", SignInView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/", include("beliefs.api.urls")),
    path("admin/", admin.site.urls),
    path("account/", account_page, name="account"),
    # (issue 23) passkeys: registered on the account page, and signing in with one
    path(
        "account/passkeys/options/",
        passkeys.passkey_registration_options,
        name="passkey-options",
    ),
    path("account/passkeys/", passkeys.passkey_add, name="passkey-add"),
    path(
        "account/passkeys/<int:passkey_id>/remove/",
        passkeys.passkey_remove,
        name="passkey-remove",
    ),
    path(
        "accounts/login/passkey/options/",
        passkeys.passkey_sign_in_options,
        name="passkey-sign-in-options",
    ),
    path("accounts/login/passkey/", passkeys.passkey_sign_in, name="passkey-sign-in"),
    path("runtimes/", runtimes_page, name="runtimes"),
    path(
        "runtimes/endpoints/<int:endpoint_id>/test/",
        endpoint_send_test,
        name="runtime-endpoint-test",
    ),
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
