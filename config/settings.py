"""Django settings for StackSelect, read from the environment (see README.md for the table).

The embedded defaults (a SQLite file and a filesystem broker under ``var/``) let ``make run``
work on a laptop with no services; production and the tests set ``DATABASE_URL`` and
``CELERY_BROKER_URL`` to PostgreSQL and Redis.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_choice, env_int, env_list, env_str, parse_team_map

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("STACKSELECT_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY", required=not DEBUG) or "insecure-debug-only-key"
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "csp",
    "apps.core",
    "apps.accounts",
    "apps.audit",
    "apps.catalog",
    "apps.selections",
    "apps.runners",
    "apps.benchmarks",
    "apps.evidence",
    "apps.decisions",
    "apps.dashboard",
]

MIDDLEWARE = [
    "apps.core.middleware.RequestIdMiddleware",
    "apps.core.middleware.RequestMetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "apps.core.throttles.AuthFailureThrottleMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "apps.accounts.middleware.CurrentTeamMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "apps.core.middleware.ServiceErrorMiddleware",
    "apps.core.middleware.UrlValueMiddleware",
    "axes.middleware.AxesMiddleware",  # last: it turns a lockout into the lockout page
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

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
                "apps.accounts.context_processors.team_context",
            ],
        },
    },
]


def _database_config() -> dict:
    url = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'stackselect.sqlite3'}")
    try:
        config = dj_database_url.parse(url, conn_max_age=env_int("DB_CONN_MAX_AGE", 60, minimum=0))
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL={url!r} is not a database URL: {exc}") from exc
    if config["ENGINE"] == "django.db.backends.sqlite3":
        config["OPTIONS"] = {"timeout": 20, "transaction_mode": "IMMEDIATE"}
        config["CONN_MAX_AGE"] = 0
    else:
        config["CONN_HEALTH_CHECKS"] = True
    test_name = env_str("DATABASE_TEST_NAME")
    if test_name:
        config["TEST"] = {"NAME": test_name}
    return config


DATABASES = {"default": _database_config()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Team invitations: a one-time link, mailed only when the operator names an e-mail backend.
INVITATION_TTL_S = env_int("INVITATION_TTL_S", 7 * 24 * 3600, minimum=300)
EMAIL_CONFIGURED = bool(env_str("EMAIL_BACKEND"))
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.dummy.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT_S", 10, minimum=1)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "stackselect@localhost")
AUTHENTICATION_BACKENDS = [
    "apps.core.login_throttle.LoginThrottleBackend",  # first: refuses a locked-out login
    "django.contrib.auth.backends.ModelBackend",
]
# Optional single sign-on with OpenID Connect (mozilla-django-oidc; apps/accounts/sso.py): the
# authorization code flow with PKCE, the ID token checked against the provider's JWKS, issuer
# and audience. Off unless OIDC_ENABLED; then every endpoint and the client are required.
OIDC_ENABLED = env_bool("OIDC_ENABLED", False)
OIDC_OP_ISSUER = env_str("OIDC_OP_ISSUER", "", required=OIDC_ENABLED)
OIDC_OP_AUTHORIZATION_ENDPOINT = env_str(
    "OIDC_OP_AUTHORIZATION_ENDPOINT", "", required=OIDC_ENABLED
)
OIDC_OP_TOKEN_ENDPOINT = env_str("OIDC_OP_TOKEN_ENDPOINT", "", required=OIDC_ENABLED)
OIDC_OP_USER_ENDPOINT = env_str("OIDC_OP_USER_ENDPOINT", "", required=OIDC_ENABLED)
OIDC_OP_JWKS_ENDPOINT = env_str("OIDC_OP_JWKS_ENDPOINT", "", required=OIDC_ENABLED)
OIDC_RP_CLIENT_ID = env_str("OIDC_RP_CLIENT_ID", "", required=OIDC_ENABLED)
OIDC_RP_CLIENT_SECRET = env_str("OIDC_RP_CLIENT_SECRET", "", required=OIDC_ENABLED)
OIDC_RP_SIGN_ALGO = env_choice("OIDC_RP_SIGN_ALGO", "RS256", ("RS256", "RS384", "RS512", "ES256"))
OIDC_RP_SCOPES = env_str("OIDC_RP_SCOPES", "openid email profile")
OIDC_TEAM_CLAIM = env_str("OIDC_TEAM_CLAIM", "")
OIDC_TEAM_MAP = parse_team_map("OIDC_TEAM_MAP", env_str("OIDC_TEAM_MAP", ""))
OIDC_LOGIN_LABEL = env_str("OIDC_LOGIN_LABEL", "Sign in with single sign-on")
OIDC_USE_PKCE = True
OIDC_TIMEOUT = env_int("OIDC_TIMEOUT_S", 10, minimum=1)
OIDC_AUTHENTICATION_CALLBACK_URL = "accounts:sso-callback"
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?sso=failed"
if OIDC_ENABLED:
    AUTHENTICATION_BACKENDS.append("apps.accounts.sso.SsoBackend")
# Login throttling (django-axes): failed passwords count per account and per address; at the
# limit both are locked out for LOGIN_LOCKOUT_MINUTES (a success resets the account's count).
AXES_ENABLED = env_bool("LOGIN_THROTTLE_ENABLED", True)
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "apps.core.login_throttle.locked_out"
AXES_CLIENT_IP_CALLABLE = "apps.core.login_throttle.login_address"
AXES_VERBOSE = False
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "dashboard:home"
LOGOUT_REDIRECT_URL = "accounts:login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
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
WHITENOISE_USE_FINDERS = DEBUG
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("UPLOAD_MAX_BYTES", 64 * 1024 * 1024, minimum=1024)

# Security: secure by default, relaxed only where the operator says so.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
# Secure cookies unless DEBUG: browsers treat http://localhost and 127.0.0.1 as secure, so a
# local `make run` still logs in; set SECURE_COOKIES=off only for plain HTTP to another host.
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = SECURE_HSTS_SECONDS > 0
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy (django-csp): this origin only and no inline script: the pages'
# scripts are static files (static/js/). Inline styles stay allowed because plotly.js styles
# its charts and mode bar through them (no script can run from a style). Swagger UI comes from
# the app's own static files and starts from a script URL of its own (the split view), so its
# page is under the same policy.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, "'unsafe-inline'"],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}
SILENCED_SYSTEM_CHECKS = env_list("SILENCED_SYSTEM_CHECKS", [])

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.accounts.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "apps.core.pagination.CheckedPageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["apps.core.query.StrictFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "apps.core.schema.ApiAutoSchema",
    "EXCEPTION_HANDLER": "apps.core.api.exception_handler",
    # JSON only by default (views that take files say so); see apps/core/parsers.py.
    "DEFAULT_PARSER_CLASSES": ["apps.core.parsers.BoundedJSONParser"],
    "DEFAULT_THROTTLE_CLASSES": ["apps.core.throttles.ApiRateThrottle"],
}
# API throttling (apps/core/throttles.py): requests per principal and scope, and refused
# credentials per address. Counters live in the cache: use Redis (CACHE_URL) with >1 process.
API_THROTTLE_ENABLED = env_bool("API_THROTTLE_ENABLED", True)
API_THROTTLE_RATES = {
    "user": env_str("API_THROTTLE_USER_RATE", "1200/min"),
    "anon": env_str("API_THROTTLE_ANON_RATE", "120/min"),
    "runner": env_str("API_THROTTLE_RUNNER_RATE", "1200/min"),
    "enroll": env_str("API_THROTTLE_ENROLL_RATE", "20/hour"),
}
API_AUTH_FAILURE_LIMIT = env_int("API_AUTH_FAILURE_LIMIT", 20, minimum=1)
API_AUTH_FAILURE_WINDOW_S = env_int("API_AUTH_FAILURE_WINDOW_S", 600, minimum=1)
# How many proxies in front append to X-Forwarded-For (0: use the peer address).
API_TRUSTED_PROXY_HOPS = env_int("TRUSTED_PROXY_HOPS", 0, minimum=0)


def _cache_config() -> dict:
    """`default` holds the throttle counters; `rendered` the page fragments keyed by what they
    show (apps/selections/row_cache.py), apart so fragments never cull a counter."""
    url = env_str("CACHE_URL", "")
    if url.startswith(("redis://", "rediss://")):
        redis = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}
        return {"default": redis, "rendered": {**redis, "KEY_PREFIX": "rendered"}}
    if url:
        raise ImproperlyConfigured(f"CACHE_URL={url!r}: give a redis:// URL or leave it unset")
    return {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "rendered": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "rendered",
            "OPTIONS": {"MAX_ENTRIES": 2000},
        },
    }


CACHES = _cache_config()
# Request bodies: the largest JSON body per endpoint and the deepest nesting any body may have.
API_JSON_MAX_DEPTH = env_int("API_JSON_MAX_DEPTH", 32, minimum=4)
API_BODY_MAX_BYTES = env_int("API_BODY_MAX_BYTES", 1024 * 1024, minimum=1024)
RUNNER_SMALL_BODY_MAX_BYTES = env_int("RUNNER_SMALL_BODY_MAX_BYTES", 64 * 1024, minimum=1024)
API_BODY_LIMITS = {
    f"runner-api:{name}": RUNNER_SMALL_BODY_MAX_BYTES
    for name in ("enroll", "probe", "heartbeat", "progress", "claim", "finish")
}
SPECTACULAR_SETTINGS = {
    "TITLE": "StackSelect API",
    "DESCRIPTION": "Choose an LLM serving stack with evidence. User API under /api/v1/.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI from the app's own static files (the sidecar package), never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "EngineKindEnum": "apps.catalog.choices.EngineKind",
        "ProjectStatusEnum": "apps.catalog.choices.ProjectStatus",
        "DecisionStatusEnum": "apps.decisions.choices.DecisionStatus",
        "TriggerKindEnum": "apps.decisions.choices.TriggerKind",
        "RunnerStateEnum": "apps.runners.choices.RunnerState",
        "RunModeEnum": "apps.benchmarks.choices.RunMode",
        "LoadModeEnum": "apps.benchmarks.choices.PlanMode",
    },
}

# Celery: Redis in production and tests; a filesystem broker needs no server for `make run`.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS: dict = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = VAR_DIR / "broker"
    for _folder in ("queue", "processed", "control"):
        (_broker_dir / _folder).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
else:
    # The lease decides liveness, so the broker must never redeliver a running job on its own.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 12 * 3600, minimum=60)
    }
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# The runner fleet (docs/runner-protocol.md): heartbeats extend a lease; the reaper ends lost ones.
RUNNER_HEARTBEAT_INTERVAL_S = env_int("RUNNER_HEARTBEAT_INTERVAL_S", 10, minimum=1)
RUNNER_LEASE_SECONDS = env_int("RUNNER_LEASE_SECONDS", 60, minimum=5)
RUNNER_OFFLINE_AFTER_S = env_int("RUNNER_OFFLINE_AFTER_S", 30, minimum=1)
RUNNER_ENROLLMENT_TTL_S = env_int("RUNNER_ENROLLMENT_TTL_S", 24 * 3600, minimum=60)
RUNNER_REAP_INTERVAL_S = env_int("RUNNER_REAP_INTERVAL_S", 15, minimum=1)
RUNNER_REDISPATCH_AFTER_S = env_int("RUNNER_REDISPATCH_AFTER_S", 300, minimum=10)
RUNNER_BROKER_URL = env_str("RUNNER_BROKER_URL", CELERY_BROKER_URL)
RUNNER_PUBLIC_URL = env_str("RUNNER_PUBLIC_URL", "")
BENCHMARK_MAX_ATTEMPTS = env_int("BENCHMARK_MAX_ATTEMPTS", 3, minimum=1)
BENCHMARK_UPLOAD_MAX_BYTES = env_int("BENCHMARK_UPLOAD_MAX_BYTES", 16 * 1024 * 1024, minimum=1024)
BENCHMARK_UPLOAD_MAX_RAW_BYTES = env_int(
    "BENCHMARK_UPLOAD_MAX_RAW_BYTES", 64 * 1024 * 1024, minimum=1024
)
# Decisions: retest triggers are swept periodically; a fired trigger may POST to a webhook.
DECISIONS_SWEEP_INTERVAL_S = env_int("DECISIONS_SWEEP_INTERVAL_S", 3600, minimum=60)
DECISIONS_WEBHOOK_URL = env_str("DECISIONS_WEBHOOK_URL", "")
# Audit: the chain's head is checkpointed outside the database (apps/audit/checkpoints.py).
AUDIT_CHECKPOINT_FILE = Path(
    env_str("AUDIT_CHECKPOINT_FILE", str(VAR_DIR / "audit-checkpoints.jsonl"))
)
AUDIT_CHECKPOINT_INTERVAL_S = env_int("AUDIT_CHECKPOINT_INTERVAL_S", 3600, minimum=60)
CELERY_BEAT_SCHEDULE: dict = {
    "audit.checkpoint": {
        "task": "audit.checkpoint",
        "schedule": float(AUDIT_CHECKPOINT_INTERVAL_S),
    },
    "benchmarks.reap_expired_leases": {
        "task": "benchmarks.reap_expired_leases",
        "schedule": float(RUNNER_REAP_INTERVAL_S),
    },
    "decisions.sweep": {"task": "decisions.sweep", "schedule": float(DECISIONS_SWEEP_INTERVAL_S)},
}

LOG_LEVEL = env_choice("LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"))
LOG_FORMAT = env_choice("LOG_FORMAT", "text", ("text", "json"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "apps.core.logging.RequestIdFilter"}},
    "formatters": {
        "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
        "json": {"()": "apps.core.logging.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["request_id"],
            "formatter": LOG_FORMAT,
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {"django.db.backends": {"level": "WARNING"}, "axes": {"level": "WARNING"}},
}
