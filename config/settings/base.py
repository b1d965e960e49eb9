"""Django settings shared by every run mode, all from the environment; alone, the local embedded default.

This module (``config.settings``, whose ``__init__`` imports it, or ``config.settings.base``) runs a local
single-user install: the embedded SQLite database, the local secret key, DEBUG off, hosts 127.0.0.1 and localhost.
``config.settings.production`` adds what a deployment needs and refuses to start without it;
``config.settings.test`` what the test run wants (docs/SOURCES.md "Run modes").

DATABASE_URL: `postgres://user@host:port/db` (PostgreSQL) or `sqlite:///path` (the embedded default,
`var/hindsight.sqlite3` in the checkout). HINDSIGHT_HEURISTICS_FILE: optional YAML overriding heuristic
thresholds (see heuristics/defaults.yaml). HINDSIGHT_SEVERITY_PROFILE: impact (default) or drelephant (docs/IMPACT.md,
docs/HEURISTICS.md "Severity profiles"). HINDSIGHT_REDACTION_PATTERNS: extra regexes, comma separated,
for configuration keys whose values are secrets.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url

# The checkout: config/settings/base.py is three levels below it.
BASE_DIR = Path(__file__).resolve().parents[2]


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _severity_profile() -> str:
    from heuristics.config import profile_from_env  # the one list of profile names

    return profile_from_env()


# A research library's threshold is written once, in the library (its DEFAULT_* constant or config dataclass): its
# setting is None unless the environment sets it, and the service then uses the library's own default. Every other
# default is written once, here; the code reads ``settings.NAME`` and never repeats it (docs/ARCHITECTURE.md).
def _env_float(name: str) -> float | None:
    value = os.environ.get(name, "").strip()
    return float(value) if value else None


def _env_int(name: str) -> int | None:
    value = os.environ.get(name, "").strip()
    return int(value) if value else None


DEBUG = _env_bool("HINDSIGHT_DEBUG", False)
# The default key only protects a local single-user install; production sets its own (production.py refuses this one).
_LOCAL_SECRET_KEY = "hindsight-local-insecure-key-change-me"  # noqa: S105 (public by design)
SECRET_KEY = os.environ.get("HINDSIGHT_SECRET_KEY", _LOCAL_SECRET_KEY)
ALLOWED_HOSTS = [h.strip() for h in os.environ.get("HINDSIGHT_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h]
# Served under another name than this machine's (or "*"), the public key would let anyone forge sessions: refuse
# (issue 15, F16). "testserver" is Django's test client.
_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]", "testserver"}
if SECRET_KEY == _LOCAL_SECRET_KEY and not set(ALLOWED_HOSTS) <= _LOCAL_HOSTS:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(
        "HINDSIGHT_ALLOWED_HOSTS names hosts other than this machine, but HINDSIGHT_SECRET_KEY is not set: the local "
        "default key is public. Set one: `python -c 'import secrets; print(secrets.token_urlsafe(50))'`"
    )

_default_db = f"sqlite:///{BASE_DIR / 'var' / 'hindsight.sqlite3'}"
DATABASES = {"default": dj_database_url.parse(os.environ.get("DATABASE_URL", _default_db), conn_max_age=60)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "analyzer",
    "webui",
    "config.apps.CeleryAppConfig",  # makes the Celery app current at set-up (config/__init__.py says why)
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "webui.middleware.SecurityHeadersMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Token mode: every page needs a signed-in user (webui/middleware.py); open mode: no-op.
    "webui.middleware.SiteLoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into the lockout page.
    "axes.middleware.AxesMiddleware",
]

# Signing in (webui/templates/registration/login.html; docs/DEPLOY.md "Users and tokens").
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "webui:dashboard"
LOGOUT_REDIRECT_URL = "webui:dashboard"
# django-axes throttles wrong passwords on the sign-in page and /admin/login/ (docs/DECISIONS.md "Sign-in
# throttling"): after HINDSIGHT_LOGIN_FAILURE_LIMIT failures for one user name, or from one client address, within
# HINDSIGHT_LOGIN_LOCKOUT_S, that user name or address is refused (even the right password) until the window passes.
# Attempts live in the database, so every web process on every machine shares them.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("HINDSIGHT_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(seconds=int(os.environ.get("HINDSIGHT_LOGIN_LOCKOUT_S", "900")))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # each alone: per user name, and per client address
AXES_RESET_ON_SUCCESS = True
# The window runs from the lockout: attempts while locked out are refused without extending it, so a stranger
# hammering a user name cannot keep its owner out for ever (the owner gets back in once the window has passed).
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# The client address is REMOTE_ADDR unless HINDSIGHT_LOGIN_CLIENT_IP_HEADER names a header the proxy in front sets
# (X-Forwarded-For: its last entry, the one the proxy appended; X-Real-IP), since a client could forge the others.
HINDSIGHT_LOGIN_CLIENT_IP_HEADER = os.environ.get("HINDSIGHT_LOGIN_CLIENT_IP_HEADER", "").strip()
AXES_CLIENT_IP_CALLABLE = "webui.middleware.client_address"
AXES_VERBOSE = False

# Response headers on every response (webui/middleware.py SecurityHeadersMiddleware; Django's SecurityMiddleware and
# XFrameOptionsMiddleware). The pages and Swagger UI load only the site's own scripts and styles (no inline script,
# no CDN); charts and the Swagger UI draw inline images from data: URIs.
HINDSIGHT_CONTENT_SECURITY_POLICY = os.environ.get(
    "HINDSIGHT_CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
    "base-uri 'self'; form-action 'self'; frame-ancestors 'none'",
).strip()
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
# Only `collectstatic` for a separate web server needs a root; set HINDSIGHT_STATIC_ROOT for that.
STATIC_ROOT = os.environ.get("HINDSIGHT_STATIC_ROOT") or None
# Serve app static files straight from their app folders: no collectstatic step for a local install.
WHITENOISE_USE_FINDERS = True

HINDSIGHT_HEURISTICS_FILE = os.environ.get("HINDSIGHT_HEURISTICS_FILE") or None
# The severity profile every heuristic suite is loaded with: "impact" (severity bounded by measured cost) or
# "drelephant" (Dr. Elephant's severities); the names and the default are heuristics.config's PROFILES. Anything else
# stops start-up here (heuristics.ConfigError, naming the variable and the known names).
HINDSIGHT_SEVERITY_PROFILE = _severity_profile()
# How far back a new source's first poll looks when it has no checkpoint yet.
HINDSIGHT_INITIAL_LOOKBACK_S = int(os.environ.get("HINDSIGHT_INITIAL_LOOKBACK_S", "3600"))
HINDSIGHT_REDACTION_PATTERNS = [p for p in os.environ.get("HINDSIGHT_REDACTION_PATTERNS", "").split(",") if p]
# YAML overriding analysis/jobinfo_defaults.yaml: job-type rules, schedulers, template-key patterns.
HINDSIGHT_JOBINFO_FILE = os.environ.get("HINDSIGHT_JOBINFO_FILE") or None
# Exactly-once analysis (analyzer/ingestion/polling.py): fetches of one app before it is stored as failed, the
# exponential backoff between them (base doubling up to a cap, with jitter), how long a claim may be held before
# another worker takes it over (above the task time limit, so a live analysis is never taken), and how long an enqueued
# app may wait in the broker before the sweeper enqueues it again (its message may have been lost).
HINDSIGHT_FETCH_BUDGET = int(os.environ.get("HINDSIGHT_FETCH_BUDGET", "5"))
HINDSIGHT_RETRY_BASE_S = float(os.environ.get("HINDSIGHT_RETRY_BASE_S", "15"))
HINDSIGHT_RETRY_MAX_S = float(os.environ.get("HINDSIGHT_RETRY_MAX_S", "900"))
HINDSIGHT_CLAIM_LEASE_S = int(os.environ.get("HINDSIGHT_CLAIM_LEASE_S", "2400"))
HINDSIGHT_ENQUEUE_GRACE_S = int(os.environ.get("HINDSIGHT_ENQUEUE_GRACE_S", "900"))
# MapReduce jobs fetched from a JobHistory Server: tasks fetched per phase (0: all; failed tasks always) and
# requests in flight at once toward it (the server is the bottleneck). Unset: 1000 and 4.
HINDSIGHT_JOBHISTORY_TASK_SAMPLE = _env_int("HINDSIGHT_JOBHISTORY_TASK_SAMPLE")  # None: the backend's default (1000)
HINDSIGHT_JOBHISTORY_MAX_CONCURRENCY = _env_int("HINDSIGHT_JOBHISTORY_MAX_CONCURRENCY")  # None: the backend's (4)
# Reading one Spark event log or .jhist (fetchers.budgets.ReadBudgets, docs/SOURCES.md "Resource budgets"); None: the
# fetcher's default. Decompressed bytes per compressed part (200 x its size, at least 1 MiB) and per log (64 GiB),
# non-empty lines (200M), one line (64 MiB: longer is skipped as malformed), wall-clock seconds per log (900: over
# it the log is an error and a poll claim fails at once), characters kept of a name (1,000) and of a text or
# configuration value (100,000).
HINDSIGHT_READ_MAX_RATIO = _env_int("HINDSIGHT_READ_MAX_RATIO")
HINDSIGHT_READ_MAX_BYTES = _env_int("HINDSIGHT_READ_MAX_BYTES")
HINDSIGHT_READ_MAX_LINES = _env_int("HINDSIGHT_READ_MAX_LINES")
HINDSIGHT_READ_MAX_LINE_BYTES = _env_int("HINDSIGHT_READ_MAX_LINE_BYTES")
HINDSIGHT_INPUT_TIME_BUDGET_S = _env_float("HINDSIGHT_INPUT_TIME_BUDGET_S")
HINDSIGHT_READ_MAX_NAME_CHARS = _env_int("HINDSIGHT_READ_MAX_NAME_CHARS")
HINDSIGHT_READ_MAX_TEXT_CHARS = _env_int("HINDSIGHT_READ_MAX_TEXT_CHARS")
# Resource budgets for what sources hand us (docs/SOURCES.md "Resource budgets"); None: the fetcher's own default.
# MapReduce job confs (fetchers.hadoop_conf.ConfBudget): the file's size (16 MiB), one value after ${var} expansion
# (1 MiB of characters) and the characters expansion may build in one file (16 MiB).
HINDSIGHT_CONF_MAX_FILE_BYTES = _env_int("HINDSIGHT_CONF_MAX_FILE_BYTES")
HINDSIGHT_CONF_MAX_VALUE_CHARS = _env_int("HINDSIGHT_CONF_MAX_VALUE_CHARS")
HINDSIGHT_CONF_MAX_EXPANSION_CHARS = _env_int("HINDSIGHT_CONF_MAX_EXPANSION_CHARS")
# History Server event-log zips (fetchers.spark_history): extraction at most this many times the download (100), a
# floor below which no archive is refused for its ratio (64 MiB), and the cap on a download and on what it extracts
# (64 GiB).
HINDSIGHT_HS_ZIP_MAX_RATIO = _env_float("HINDSIGHT_HS_ZIP_MAX_RATIO")
HINDSIGHT_HS_ZIP_MIN_BYTES = _env_int("HINDSIGHT_HS_ZIP_MIN_BYTES")
HINDSIGHT_HS_MAX_LOG_BYTES = _env_int("HINDSIGHT_HS_MAX_LOG_BYTES")
# How often a source lists its last relist_lookback_s again, for apps its server listed after their window passed.
HINDSIGHT_RELIST_EVERY_S = int(os.environ.get("HINDSIGHT_RELIST_EVERY_S", "300"))
# /healthz checks the broker: "required", "off" (the poll loop or poll --once, no Celery), or "auto" (required
# with PostgreSQL, not checked with the embedded SQLite). See docs/SOURCES.md "Operating".
HINDSIGHT_HEALTH_BROKER = os.environ.get("HINDSIGHT_HEALTH_BROKER", "auto")

# Slowdown attribution (issue 6, docs/DECISIONS.md "Slowdown attribution"): a model is trained on the runs that
# ended in the last WINDOW_DAYS, daily by beat (TRAIN_EVERY_S); the newest version whose held-out MARE (Griffin
# Eq. 11, mean |predicted - actual| / the template's usual runtime) is at most MAX_MARE serves, and the newest
# KEEP_VERSIONS versions are kept (plus the serving one).
HINDSIGHT_ATTRIBUTION_WINDOW_DAYS = int(os.environ.get("HINDSIGHT_ATTRIBUTION_WINDOW_DAYS", "30"))
HINDSIGHT_ATTRIBUTION_TRAIN_EVERY_S = float(os.environ.get("HINDSIGHT_ATTRIBUTION_TRAIN_EVERY_S", "86400"))
HINDSIGHT_ATTRIBUTION_MAX_MARE = float(os.environ.get("HINDSIGHT_ATTRIBUTION_MAX_MARE", "0.25"))
# The production bar: MAX_MARE's default. An installation may serve a looser model (the demo sets MAX_MARE=1.0);
# the report then says the serving model is above this bar and serves no High confidence (issue 16).
HINDSIGHT_ATTRIBUTION_PRODUCTION_MARE = 0.25
HINDSIGHT_ATTRIBUTION_KEEP_VERSIONS = int(os.environ.get("HINDSIGHT_ATTRIBUTION_KEEP_VERSIONS", "5"))

# Stage anomaly localization (issue 7, analyzer/stages/services.py; docs/DECISIONS.md "Stage anomalies in the
# product"): per (template, cluster), the latest MAX_RUNS successful runs; a category (one stage signature) is
# analysed when it has MIN_RUNS runs and its run-time CV is above ALPHA; a stage is anomalous when cos(M_i, L_i) is
# below BETA and a run is at least MIN_EFFECT slower than expected there. Beat recomputes pairs with new runs every
# EVERY_S, at most PER_CALL pairs a call.
# ALPHA, BETA, MIN_RUNS and MIN_EFFECT default to analysis.stages.localize's DEFAULT_* (0.15, 0.98, 8, 0.25).
HINDSIGHT_STAGE_LOCALIZATION_ALPHA = _env_float("HINDSIGHT_STAGE_LOCALIZATION_ALPHA")
HINDSIGHT_STAGE_LOCALIZATION_BETA = _env_float("HINDSIGHT_STAGE_LOCALIZATION_BETA")
HINDSIGHT_STAGE_LOCALIZATION_MIN_RUNS = _env_int("HINDSIGHT_STAGE_LOCALIZATION_MIN_RUNS")
HINDSIGHT_STAGE_LOCALIZATION_MIN_EFFECT = _env_float("HINDSIGHT_STAGE_LOCALIZATION_MIN_EFFECT")
HINDSIGHT_STAGE_LOCALIZATION_MAX_RUNS = int(os.environ.get("HINDSIGHT_STAGE_LOCALIZATION_MAX_RUNS", "200"))
HINDSIGHT_STAGE_LOCALIZATION_PER_CALL = int(os.environ.get("HINDSIGHT_STAGE_LOCALIZATION_PER_CALL", "50"))
HINDSIGHT_STAGE_LOCALIZATION_EVERY_S = float(os.environ.get("HINDSIGHT_STAGE_LOCALIZATION_EVERY_S", "3600"))
# An outlier run's host is named when its mean task time in the stage is this many times the other hosts'
# (and this many times its usual ratio in the other runs).
HINDSIGHT_STAGE_LOCALIZATION_HOST_FACTOR = float(os.environ.get("HINDSIGHT_STAGE_LOCALIZATION_HOST_FACTOR", "1.5"))

# Straggler hosts (issue 7, docs/DECISIONS.md "Straggler hosts in the product"; analyzer.hosts.services): every
# RANK_EVERY_S, beat ranks each cluster's hosts over each of WINDOWS ("<n>h" or "<n>d") from the z-score samples
# stored per app; a host needs MIN_HOST_TASKS z-scores in the window to be ranked, and is a straggler when its tasks
# ran at least MIN_SLOWDOWN times its hardware class's median speed and its mean z is significantly above its class's
# at ALPHA (Benjamini-Hochberg); MIN_EFFECT (z units) is where the paper's levels stop telling slow hosts apart;
# EXTREME_Z is the z above which a task counts as an extreme value; at most MAX_TASKS_PER_HOST z-scores per host and
# window (a seeded sample) bound the memory of long windows; the newest KEEP_SNAPSHOTS per cluster and window are kept.
HINDSIGHT_HOSTS_WINDOWS = tuple(
    w.strip() for w in os.environ.get("HINDSIGHT_HOSTS_WINDOWS", "24h,7d").split(",") if w.strip()
)
HINDSIGHT_HOSTS_RANK_EVERY_S = float(os.environ.get("HINDSIGHT_HOSTS_RANK_EVERY_S", "3600"))
# MIN_HOST_TASKS, MIN_EFFECT, ALPHA and EXTREME_Z default to analysis.hosts.RankingConfig's (30, 0.25, 0.01, 1.5).
HINDSIGHT_HOSTS_MIN_HOST_TASKS = _env_int("HINDSIGHT_HOSTS_MIN_HOST_TASKS")
HINDSIGHT_HOSTS_MIN_EFFECT = _env_float("HINDSIGHT_HOSTS_MIN_EFFECT")
HINDSIGHT_HOSTS_ALPHA = _env_float("HINDSIGHT_HOSTS_ALPHA")
HINDSIGHT_HOSTS_EXTREME_Z = _env_float("HINDSIGHT_HOSTS_EXTREME_Z")
HINDSIGHT_HOSTS_MIN_SLOWDOWN = _env_float("HINDSIGHT_HOSTS_MIN_SLOWDOWN")  # None: the library's 1.3
# Hardware classes by host name, "glob=class" pairs separated by commas (e.g. "gen1-*=gen1,old-*=gen0"); the first
# matching pattern wins; hosts matching none are classed by their speed (analysis.hosts.hardware_classes).
HINDSIGHT_HOSTS_CLASSES = os.environ.get("HINDSIGHT_HOSTS_CLASSES", "")
# ``rank_hosts --backfill`` ranks at most this many past window ends per run (each end ranks every window).
HINDSIGHT_HOSTS_BACKFILL_BATCH = int(os.environ.get("HINDSIGHT_HOSTS_BACKFILL_BATCH", "50"))
HINDSIGHT_HOSTS_MAX_TASKS_PER_HOST = int(os.environ.get("HINDSIGHT_HOSTS_MAX_TASKS_PER_HOST", "2000"))
HINDSIGHT_HOSTS_KEEP_SNAPSHOTS = int(os.environ.get("HINDSIGHT_HOSTS_KEEP_SNAPSHOTS", "48"))

# Who may read (docs/DEPLOY.md "Users and tokens"). HINDSIGHT_API_AUTH: "open" (anyone who reaches the site reads
# everything: every page, report and Spark configuration (after redaction), the API, /metrics, the schema, as the
# History Server's UI does) or "token" (the whole site needs a signed-in user; the API a DRF token,
# "Authorization: Token <key>", or a signed-in session; /metrics a staff session or HINDSIGHT_METRICS_TOKEN as
# "Authorization: Bearer <token>"; only the sign-in page, /healthz and static files stay open).
# Throttle rates ("<n>/<second|minute|hour|day>", empty for none) apply per client address, or per user when
# signed in.
HINDSIGHT_API_AUTH = os.environ.get("HINDSIGHT_API_AUTH", "open").strip().lower()
if HINDSIGHT_API_AUTH not in {"open", "token"}:
    raise ValueError(f"HINDSIGHT_API_AUTH must be open or token, not {HINDSIGHT_API_AUTH!r}")
HINDSIGHT_METRICS_TOKEN = os.environ.get("HINDSIGHT_METRICS_TOKEN", "").strip()
HINDSIGHT_API_THROTTLE_ANON = os.environ.get("HINDSIGHT_API_THROTTLE_ANON", "600/minute").strip()
HINDSIGHT_API_THROTTLE_USER = os.environ.get("HINDSIGHT_API_THROTTLE_USER", "3000/minute").strip()
# On-demand analysis (POST /api/v1/analyze, analyzer.ingestion.ondemand; docs/DECISIONS.md "Waiting on-demand
# requests"). A waiting request holds one sync web worker, so: a caller who is not staff waits at most MAX_WAIT_S
# (a longer wait_s is clamped and the answer says so; staff up to ondemand.MAX_WAIT_S, 300); one user has at most
# MAX_WAITING_PER_USER requests waiting at once and everyone together at most MAX_WAITING (default: half the web
# workers, WEB_CONCURRENCY or the Procfile's two per core), beyond which the answer is 429 with Retry-After; one user
# has at most MAX_UNVERIFIED_PER_USER requested apps that no source listed yet and no worker has looked up (a made-up
# id is answered "not found" and kept NOT_FOUND_KEEP_S for the gate to say so, then removed).
_WEB_WORKERS = _env_int("WEB_CONCURRENCY") or 2 * (os.cpu_count() or 1)
HINDSIGHT_ANALYZE_MAX_WAIT_S = int(os.environ.get("HINDSIGHT_ANALYZE_MAX_WAIT_S", "30"))
HINDSIGHT_ANALYZE_MAX_WAITING_PER_USER = int(os.environ.get("HINDSIGHT_ANALYZE_MAX_WAITING_PER_USER", "2"))
HINDSIGHT_ANALYZE_MAX_WAITING = _env_int("HINDSIGHT_ANALYZE_MAX_WAITING") or max(1, _WEB_WORKERS // 2)
HINDSIGHT_ANALYZE_MAX_UNVERIFIED_PER_USER = int(os.environ.get("HINDSIGHT_ANALYZE_MAX_UNVERIFIED_PER_USER", "20"))
HINDSIGHT_ANALYZE_NOT_FOUND_KEEP_S = int(os.environ.get("HINDSIGHT_ANALYZE_NOT_FOUND_KEEP_S", "86400"))
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["webui.api.permissions.ApiReadAccess"],
    "DEFAULT_THROTTLE_CLASSES": ["webui.api.throttling.ApiAnonThrottle", "webui.api.throttling.ApiUserThrottle"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "webui.api.errors.api_exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Hindsight API",
    "DESCRIPTION": "Analyzed Spark and MapReduce applications, the heuristic catalogue, cluster sources and a CI "
    "gate. The writes are on-demand analysis (POST /api/v1/analyze: a token or a staff session) and retrying a "
    "cluster's failed apps (staff). "
    'Errors are {"error": {"code", "message", "field"}}.',
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and Swagger UI are readable by whoever may read the API (token mode: signed in).
    "SERVE_PERMISSIONS": ["webui.api.permissions.ApiReadAccess"],
    # Swagger UI's files come from the drf-spectacular-sidecar package: nothing is loaded from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "ENUM_NAME_OVERRIDES": {"SeverityEnum": "webui.api.serializers.SEVERITY_NAMES"},
}

# Celery (worker + beat, the production run mode; docs/SOURCES.md "Run modes"). Redis by default;
# HINDSIGHT_BROKER_URL=amqp://guest:guest@127.0.0.1:5672// uses RabbitMQ instead.
CELERY_BROKER_URL = os.environ.get("HINDSIGHT_BROKER_URL", "redis://127.0.0.1:6379/0")
# A task is acknowledged once done, so a worker dying mid-poll gives it back to the broker; claims keep it once.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# One more worker process than cores: each app task also waits on the database and the log's storage, and the
# throughput benchmark measured 12.5 apps/s with 2 processes on 2 cores against 13.8 with 3 (docs/BENCHMARKS.md).
CELERY_WORKER_CONCURRENCY = int(os.environ.get("HINDSIGHT_WORKER_CONCURRENCY", str((os.cpu_count() or 1) + 1)))
CELERY_WORKER_PREFETCH_MULTIPLIER = 1  # long polls: a worker takes one at a time, the others stay free
# A source pass that hangs (a server never answering) is stopped; its claims' lease lets another take them.
CELERY_TASK_SOFT_TIME_LIMIT = int(os.environ.get("HINDSIGHT_TASK_SOFT_TIME_LIMIT_S", "1500"))
CELERY_TASK_TIME_LIMIT = int(os.environ.get("HINDSIGHT_TASK_TIME_LIMIT_S", "1800"))
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery's Django fixup closes the database connection around every task unless told to reuse it: a new
# PostgreSQL connection per app analyzed costs ~15 ms. Reused for this many tasks, then opened afresh.
CELERY_DB_REUSE_MAX = int(os.environ.get("HINDSIGHT_DB_REUSE_MAX", "100"))
# Redis gives an unacknowledged task (its worker killed) to another worker after this; above the time limit.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": int(os.environ.get("HINDSIGHT_BROKER_VISIBILITY_TIMEOUT_S", "3600")),
}
CELERY_TIMEZONE = TIME_ZONE
# Beat only asks which sources are due (each keeps its own poll_interval_s, default 10 s) and which listed apps
# wait for a (re)try; the passes and the per-app analyses are tasks of their own.
CELERY_BEAT_SCHEDULE = {
    # How often beat asks: the floor of the delay from an app's end to its report, beside the safety margin.
    "poll-due-sources": {
        "task": "analyzer.tasks.poll_due_sources",
        "schedule": float(os.environ.get("HINDSIGHT_BEAT_INTERVAL_S", "2")),
    },
    # A new slowdown-attribution model on the latest window (analyzer.attribution.services).
    "train-attribution": {
        "task": "analyzer.tasks.train_attribution_task",
        "schedule": HINDSIGHT_ATTRIBUTION_TRAIN_EVERY_S,
    },
    # Stage anomaly localization of the templates with new runs (analyzer.stages.services.localize_due).
    "localize-stages": {
        "task": "analyzer.tasks.localize_stages_task",
        "schedule": HINDSIGHT_STAGE_LOCALIZATION_EVERY_S,
    },
    # Straggler-host snapshots of every cluster and window (analyzer.hosts.services).
    "rank-hosts": {
        "task": "analyzer.tasks.rank_hosts_task",
        "schedule": HINDSIGHT_HOSTS_RANK_EVERY_S,
    },
}
