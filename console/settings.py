"""Settings for the confirmation console.

One module, read from the environment. SQLite by default; PostgreSQL when DATABASE_URL is set.
Production (DEBUG off) refuses to start without DJANGO_SECRET_KEY and DJANGO_ALLOWED_HOSTS.
"""

from __future__ import annotations

import ipaddress
import json
import os
from datetime import timedelta
from pathlib import Path
from typing import TypeVar

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in {"1", "true", "yes", "on"}:
        return True
    if raw.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {raw!r}")


_N = TypeVar("_N", int, float)


def _env_number(name: str, default: _N, kind: type[_N], what: str) -> _N:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return kind(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be {what}, got {raw!r}") from exc


def env_int(name: str, default: int) -> int:
    return _env_number(name, default, int, "an integer")


def env_float(name: str, default: float) -> float:
    return _env_number(name, default, float, "a number")


def env_floats(name: str) -> list[float] | None:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return None
    try:
        return [float(item) for item in raw.split(",")]
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be numbers separated by commas") from exc


def lease_longer_than_deadline(name: str, lease: float, deadline: float) -> None:
    """A lease not longer than the attempt's deadline lets the sweep start a second attempt
    while the first still runs."""
    if deadline <= 0 or lease <= deadline:
        raise ImproperlyConfigured(
            f"{name}: the lease ({lease:g} s) must be longer than the deadline ({deadline:g} s), "
            "and the deadline positive"
        )


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", True)

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DEBUG is off")
    SECRET_KEY = "insecure-development-key-only-for-local-use-never-in-production-0123456789"

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
if not DEBUG and not os.environ.get("DJANGO_ALLOWED_HOSTS"):
    raise ImproperlyConfigured("DJANGO_ALLOWED_HOSTS must be set when DEBUG is off")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework_api_key",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "csp",
    "axes",
    "beliefs",
    "console",
    "demo",
]

MIDDLEWARE = [
    # Outermost: counts every answer by view and status (/metrics).
    "console.metrics.RequestMetricsMiddleware",
    # The request's trace (W3C traceparent), carried into its webhooks and log lines.
    "console.tracing.TraceContextMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "console.middleware.ApiBodyLimitMiddleware",
    "console.middleware.NoStorePagesMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # Before CSRF, whose check reads a form body: nothing reads a body the guard has not seen.
    "console.middleware.InputGuardMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Inside the session and the person (the page's header), outside every view.
    "console.middleware.OwnNotFoundMiddleware",
    "axes.middleware.AxesMiddleware",
    "console.middleware.DatabaseBusyMiddleware",
]

ROOT_URLCONF = "console.urls"
WSGI_APPLICATION = "console.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "console.context_processors.roles",
                "console.context_processors.site",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        # Reuse a connection across requests: opening one costs more than most requests here.
        # Off in development and the tests: a request's connection closes at its end, so none
        # is left open on the test database when the tests' live server empties or drops it.
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0 if DEBUG else 60),
        # A reused connection the database dropped is replaced before a request uses it.
        conn_health_checks=env_bool("DATABASE_CONN_HEALTH_CHECKS", True),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Writes take the database lock at BEGIN, so two racing responses queue instead of failing.
    # Write-ahead logging lets pages, long-polls and the worker read while a write commits
    # (in the default journal a reader holds off every writer); commits stay fully synced.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL",
    }
    # Tests on a file, not SQLite's in-memory database: its connections share one cache, where
    # a table lock is refused at once instead of waited for (a live page's read would make a
    # person's answer fail), and the test live server would share one connection between its
    # threads. The file locks as production's does: a writer waits for a reader.
    DATABASES["default"]["TEST"] = {"NAME": str(BASE_DIR / "test-db.sqlite3")}
elif env_bool("DATABASE_PREPARED_STATEMENTS", True):
    # A statement run a few times on a kept connection is prepared there: PostgreSQL then plans
    # it once, where planning took longer than running the short queries of a request. Needs
    # parameters bound by the server, and a connection of one's own for each worker (off behind
    # a pooler that hands one connection to several clients in turn, such as PgBouncer in
    # transaction mode).
    DATABASES["default"]["OPTIONS"] = {"server_side_binding": True, "prepare_threshold": 5}
DATABASE_POOL = env_int("DATABASE_POOL", 0)
if DATABASE_POOL > 0 and DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # `make serve` (uvicorn): the process's requests take connections from a pool of this many
    # in turn (Django's pool, psycopg_pool). Waiting for one gives up with the database-busy
    # answer (503) after `timeout` seconds.
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool keeps them (Django refuses both)
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": min(2, DATABASE_POOL),
        "max_size": DATABASE_POOL,
        "timeout": 10,
    }
# Under ASGI (`make serve`) the threads that answer requests, per process (`console.asgi`). Few:
# a request holds the interpreter lock for most of its time, so more threads than it takes to
# overlap one request's database work with another's only take turns with the lock (and the
# event loop that answers every connection of the process waits its turn with them). A
# connection pool (`DATABASE_POOL`) needs at least as many connections.
REQUEST_THREADS = env_int("REQUEST_THREADS", 4)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    # Refuses every password when CONSOLE_PASSWORD_SIGN_IN is off, before ModelBackend sees it.
    "console.sso.PasswordSignInGate",
    "django.contrib.auth.backends.ModelBackend",
    # Single sign-on: answers only the provider's callback, and only when OIDC_ISSUER is set.
    "console.sso.SSOBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("AXES_COOLOFF_MINUTES", 15))
# Lock one account from one address: failures for alice from an address never lock out bob,
# nor alice from elsewhere (behind a proxy, locking an address would lock out everyone).
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# The client address, through this many trusted reverse proxies (each appending to
# X-Forwarded-For); 0 trusts no header and uses the socket's address.
CONSOLE_TRUSTED_PROXIES = env_int("CONSOLE_TRUSTED_PROXIES", 0)
AXES_CLIENT_IP_CALLABLE = "console.client_ip.client_ip"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# Single sign-on's callback is neither counted nor locked out (console.sso.exempt_from_lockout).
AXES_WHITELIST_CALLABLE = "console.sso.exempt_from_lockout"
# No "AXES: BEGIN" banner from every process that loads the app (make run starts four).
AXES_VERBOSE = False

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Where `collectstatic` writes and production serves the static files from.
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT") or BASE_DIR / "staticfiles")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "beliefs.api.auth.RuntimeKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "beliefs.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "beliefs.api.errors.exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["beliefs.jsonbody.GuardedJSONParser"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
API_KEY_CUSTOM_HEADER = "HTTP_AUTHORIZATION"

SPECTACULAR_SETTINGS = {
    "TITLE": "Confirmation console API",
    "DESCRIPTION": (
        "Record beliefs with provenance, plan bindings, and collect confirmations for "
        "irreversible actions."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Served from our own static files: no CDN, and the page passes our CSP.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "InstanceStatusEnum": "beliefs.api.serializers.INSTANCE_STATUSES",
        "BeliefStatusEnum": "beliefs.api.serializers.BELIEF_STATUSES",
        "RiskClassEnum": "beliefs.schemas.RISKS",
        "ActionEnum": "beliefs.schemas.PROMPT_ACTIONS",
        "ApprovalActionEnum": "beliefs.schemas.APPROVAL_ACTIONS",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "beliefs.api.schema.refuse_unknown_fields",
    ],
}

# Content-Security-Policy: no inline scripts or styles, nothing from elsewhere.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    },
}

CSRF_FAILURE_VIEW = "console.errors.csrf_failure"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# LOG_FORMAT=json: one JSON object a line, with the trace id of the request or delivery.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "console.tracing.JsonFormatter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            **({"formatter": "json"} if os.environ.get("LOG_FORMAT") == "json" else {}),
        }
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}

# --- Product settings -------------------------------------------------------------------------
# How long a blocking prompt may wait before its instance expires.
CONSOLE_PROMPT_TTL = timedelta(seconds=env_int("CONSOLE_PROMPT_TTL_SECONDS", 24 * 3600))
# M-of-N approval: how long a decision's approvers have once the principal has answered.
CONSOLE_APPROVAL_TTL = timedelta(
    seconds=env_int("CONSOLE_APPROVAL_TTL_SECONDS", int(CONSOLE_PROMPT_TTL.total_seconds()))
)
# Anti-fatigue: the confirm button of an irreversible prompt enables only after this delay.
CONSOLE_CONFIRM_DELAY_MS = env_int("CONSOLE_CONFIRM_DELAY_MS", 1000)
# Friction that rises with habituation: when at least this share of a person's latest WINDOW
# irreversible confirmations kept the value on record, with a median dwell below this many
# seconds, the next ones ask the person to type the value's last characters.
CONSOLE_HABIT_WINDOW = env_int("CONSOLE_HABIT_WINDOW", 20)
CONSOLE_HABIT_KEPT_SHARE = env_float("CONSOLE_HABIT_KEPT_SHARE", 0.9)
CONSOLE_HABIT_MEDIAN_DWELL_S = env_float("CONSOLE_HABIT_MEDIAN_DWELL_S", 2.0)
# The largest JSON body the API reads (a proposal carries its whole graph).
API_MAX_BODY_BYTES = env_int("API_MAX_BODY_BYTES", 10 * 1024 * 1024)
# Limits on what one runtime can make the console hold (beliefs/services/limits.py): every page
# and plan grows with them. A registration, or a belief for an undeclared slot, beyond them is
# refused (400 limit_exceeded); so is an open once the person has this many open instances from
# the runtime (409 too_many_open_instances).
CONSOLE_MAX_SLOTS_PER_TASK_CLASS = env_int("CONSOLE_MAX_SLOTS_PER_TASK_CLASS", 300)
CONSOLE_MAX_DECISIONS_PER_TASK_CLASS = env_int("CONSOLE_MAX_DECISIONS_PER_TASK_CLASS", 100)
CONSOLE_MAX_OPEN_INSTANCES = env_int("CONSOLE_MAX_OPEN_INSTANCES", 50)
# Proposal contract transition policy: "strict" (default) or "lenient".
CONSOLE_TRANSITION_POLICY = os.environ.get("CONSOLE_TRANSITION_POLICY", "strict")
if CONSOLE_TRANSITION_POLICY not in {"strict", "lenient"}:  # TransitionPolicy's values
    raise ImproperlyConfigured("CONSOLE_TRANSITION_POLICY must be 'strict' or 'lenient'")

# --- Background work, webhooks and email ------------------------------------------------------
# What the console sends out waits in the outbox tables of its own database, so it commits or
# rolls back with the change that caused it. Run workers with `python manage.py worker` (any
# number, anywhere).
# How often each worker sweeps for expiring prompts, due expiries and stalled deliveries.
CONSOLE_SWEEP_SECONDS = env_int("CONSOLE_SWEEP_SECONDS", 60)
# A blocking prompt with less than this left warns its runtime (instance.expiring) and person.
CONSOLE_EXPIRY_WARNING = timedelta(seconds=env_int("CONSOLE_EXPIRY_WARNING_SECONDS", 3600))
# Webhook endpoints on loopback, private or link-local addresses (and plain http for those):
# for development only, so on by default only with DEBUG.
CONSOLE_WEBHOOK_ALLOW_PRIVATE = env_bool("CONSOLE_WEBHOOK_ALLOW_PRIVATE", DEBUG)
# One attempt's total deadline (resolve, connect, TLS, send, read the answer), however the
# receiver behaves; a worker holds a claimed delivery for the lease, which must be longer.
CONSOLE_WEBHOOK_TIMEOUT_SECONDS = env_float("CONSOLE_WEBHOOK_TIMEOUT_SECONDS", 5)
CONSOLE_WEBHOOK_LEASE_SECONDS = env_float("CONSOLE_WEBHOOK_LEASE_SECONDS", 120)
lease_longer_than_deadline(
    "CONSOLE_WEBHOOK_LEASE_SECONDS", CONSOLE_WEBHOOK_LEASE_SECONDS, CONSOLE_WEBHOOK_TIMEOUT_SECONDS
)
# Seconds to wait before each retry (a comma-separated list); None: the default schedule
# (about three days).
CONSOLE_WEBHOOK_RETRY_SECONDS: list[float] | None = env_floats("CONSOLE_WEBHOOK_RETRY_SECONDS")
# Endpoints one runtime may have; deliveries in flight at once per endpoint and per runtime
# (keep the latter below the number of workers, so one runtime cannot take them all). A
# delivery over a cap waits, pending, until one of those in flight finishes.
CONSOLE_WEBHOOK_MAX_ENDPOINTS = env_int("CONSOLE_WEBHOOK_MAX_ENDPOINTS", 20)
CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT = env_int(
    "CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT", 2
)
CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_RUNTIME = env_int("CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_RUNTIME", 4)
# Where people reach the console: the links in emails.
CONSOLE_BASE_URL = os.environ.get("CONSOLE_BASE_URL", "http://127.0.0.1:8000").rstrip("/")

# --- Receipts ---------------------------------------------------------------------------------
# What the console keeps outside the database (in development: the receipts' signing key).
# Never inside the repository.
CONSOLE_DATA_DIR = Path(
    os.environ.get("CONSOLE_DATA_DIR")
    or Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    / "confirmation-console"
)
# PEM files of the receipts' Ed25519 signing keys: the first signs, all are published (rotate
# by putting a new key first). Required with DEBUG off; `manage.py receipt_key PATH` makes one.
CONSOLE_RECEIPT_SIGNING_KEYS = env_list("CONSOLE_RECEIPT_SIGNING_KEYS", [])
# How long a receipt may be redeemed or verified after the instance became ready.
CONSOLE_RECEIPT_TTL = timedelta(seconds=env_int("CONSOLE_RECEIPT_TTL_SECONDS", 24 * 3600))

# --- Metrics -----------------------------------------------------------------------------------
# /metrics answers a scraper that sends `Authorization: Bearer <CONSOLE_METRICS_TOKEN>`, or one
# from these networks (comma-separated CIDRs; loopback by default); anyone else gets 404.
CONSOLE_METRICS_TOKEN = os.environ.get("CONSOLE_METRICS_TOKEN", "")
CONSOLE_METRICS_NETWORKS = [
    ipaddress.ip_network(network.strip(), strict=False)
    for network in env_list("CONSOLE_METRICS_NETWORKS", ["127.0.0.1/32", "::1/128"])
]

# --- Passkeys (WebAuthn) ----------------------------------------------------------------------
# The relying party: passkeys are bound to this domain. Empty: the host the page was served on
# (after ALLOWED_HOSTS), so http://localhost:8000 works in development. WebAuthn needs a secure
# context (https, or http on localhost) and a domain, never an IP address: open the console as
# http://localhost:PORT, not http://127.0.0.1:PORT. Set it (e.g. "console.example.com") in
# production, with CONSOLE_WEBAUTHN_ORIGINS the exact origins pages are served from.
CONSOLE_WEBAUTHN_RP_ID = os.environ.get("CONSOLE_WEBAUTHN_RP_ID", "")
CONSOLE_WEBAUTHN_RP_NAME = os.environ.get("CONSOLE_WEBAUTHN_RP_NAME", "Confirmation console")
# Empty: the origin of the request (scheme and host).
CONSOLE_WEBAUTHN_ORIGINS = env_list("CONSOLE_WEBAUTHN_ORIGINS", [])
# How long an instance waits for its signature once every answer is in (then it expires).
CONSOLE_SIGNATURE_TTL = timedelta(
    seconds=env_int("CONSOLE_SIGNATURE_TTL_SECONDS", int(CONSOLE_PROMPT_TTL.total_seconds()))
)
# How long one signing attempt's nonce stays usable.
CONSOLE_SIGNATURE_ATTEMPT_TTL = timedelta(seconds=env_int("CONSOLE_SIGNATURE_ATTEMPT_SECONDS", 300))

# --- Single sign-on (OpenID Connect) ---------------------------------------------------------
# On when OIDC_ISSUER is set (docs/sso.md): the sign-in page offers "Sign in with
# <OIDC_PROVIDER_NAME>", the authorization code flow with PKCE (S256). The provider's endpoints
# come from its discovery document, fetched at the first sign-in, not at start-up.
OIDC_ISSUER = os.environ.get("OIDC_ISSUER", "")
OIDC_CLIENT_ID = os.environ.get("OIDC_CLIENT_ID", "")
OIDC_CLIENT_SECRET = os.environ.get("OIDC_CLIENT_SECRET", "")
if OIDC_ISSUER and not (OIDC_CLIENT_ID and OIDC_CLIENT_SECRET):
    raise ImproperlyConfigured("OIDC_ISSUER needs OIDC_CLIENT_ID and OIDC_CLIENT_SECRET")
OIDC_PROVIDER_NAME = os.environ.get("OIDC_PROVIDER_NAME", "SSO")
# Some providers send the groups claim only for a scope of its own (add "groups" here then).
OIDC_SCOPES = os.environ.get("OIDC_SCOPES", "openid email profile")
OIDC_SIGN_ALGO = os.environ.get("OIDC_SIGN_ALGO", "RS256")
OIDC_TIMEOUT_SECONDS = env_float("OIDC_TIMEOUT_SECONDS", 5)
OIDC_GROUPS_CLAIM = os.environ.get("OIDC_GROUPS_CLAIM", "groups")


def env_group_roles(name: str) -> dict[str, list[str]]:
    """The provider's groups, each with the console groups it gives: "idp=console,..." (a
    provider group may be named twice, for two console groups) or a JSON object whose values
    are a name or a list of names (for names with commas or equals signs)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return {}
    roles: dict[str, list[str]] = {}
    if raw.startswith("{"):
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{name} is not valid JSON: {exc}") from exc
        for idp, console in data.items():
            names = [console] if isinstance(console, str) else console
            if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
                raise ImproperlyConfigured(f"{name}: {idp!r} must map to a name or names")
            roles.setdefault(idp, []).extend(names)
        return roles
    for pair in raw.split(","):
        if not pair.strip():
            continue
        idp, equals, console = (part.strip() for part in pair.partition("="))
        if not (equals and idp and console):
            raise ImproperlyConfigured(f"{name}: {pair.strip()!r} is not provider-group=group")
        roles.setdefault(idp, []).append(console)
    return roles


# Which console groups each provider group gives; at every sign-in a person's membership of
# every group named here is set to what their groups claim gives, others are left alone.
OIDC_GROUP_ROLES = env_group_roles("OIDC_GROUP_ROLES")
# Off: the sign-in page offers only the provider (no password form, no passkey sign-in), and
# every password is refused, the admin's login too. Passkeys still sign approvals.
CONSOLE_PASSWORD_SIGN_IN = env_bool("CONSOLE_PASSWORD_SIGN_IN", True)
if not CONSOLE_PASSWORD_SIGN_IN and not OIDC_ISSUER:
    raise ImproperlyConfigured("CONSOLE_PASSWORD_SIGN_IN=false needs OIDC_ISSUER: no way in")

# Email: one line of the log per email unless EMAIL_HOST is set, then sent by SMTP.
EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
EMAIL_BACKEND = (
    "beliefs.mail.DeadlineSMTPBackend"  # Django's SMTP backend, under the deadline below
    if EMAIL_HOST
    else "beliefs.mail.LogEmailBackend"
)
EMAIL_PORT = env_int("EMAIL_PORT", 587)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "console@localhost")
# Sending one email (connect, TLS, log in, DATA) has a total deadline, shorter than the lease
# a worker holds it by; a worker that dies mid-send leaves it to be sent after the lease.
CONSOLE_EMAIL_DEADLINE_SECONDS = env_float("CONSOLE_EMAIL_DEADLINE_SECONDS", 30)
CONSOLE_EMAIL_LEASE_SECONDS = env_float("CONSOLE_EMAIL_LEASE_SECONDS", 120)
lease_longer_than_deadline(
    "CONSOLE_EMAIL_LEASE_SECONDS", CONSOLE_EMAIL_LEASE_SECONDS, CONSOLE_EMAIL_DEADLINE_SECONDS
)
# Seconds to wait before each retry of an email (a comma-separated list); None: the default
# schedule (about 17 hours).
CONSOLE_EMAIL_RETRY_SECONDS: list[float] | None = env_floats("CONSOLE_EMAIL_RETRY_SECONDS")
# At most one email of a kind per person per window: what starts waiting within it goes out
# together, in one digest, at the window's end.
CONSOLE_EMAIL_DIGEST_WINDOW = timedelta(seconds=env_int("CONSOLE_EMAIL_DIGEST_SECONDS", 300))
