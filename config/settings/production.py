"""Production settings: the shared base plus what a deployment needs (docs/SOURCES.md "Run modes").

Set ``DJANGO_SETTINGS_MODULE=config.settings.production`` for the web (gunicorn), worker and beat processes, as the
Procfile does. Start-up stops with ImproperlyConfigured, naming the variable, when HINDSIGHT_SECRET_KEY is missing,
empty or the local default (anyone could sign sessions and password-reset links with a key published in the
source), when HINDSIGHT_DEBUG is on (tracebacks with settings and SQL shown to any visitor), or when
HINDSIGHT_ALLOWED_HOSTS is not set (the local default only fits a browser on the same machine).

The hardening below assumes HTTPS in front (a reverse proxy terminating TLS, gunicorn on 127.0.0.1 behind it):
cookies are Secure and HttpOnly unless HINDSIGHT_SECURE_COOKIES=0 (a plain-HTTP intranet install; without it the
browser never sends the session or CSRF cookie back over HTTP, so no one can sign in). Redirecting HTTP to HTTPS
and HSTS are left to the operator (HINDSIGHT_SSL_REDIRECT, HINDSIGHT_HSTS_SECONDS): both need HTTPS working
end to end first, and HSTS pins every browser to HTTPS for the domain for that long. docs/DEPLOY.md gives the
whole environment (those switches on, token mode, the metrics scrape token), under which `check --deploy` prints
no warning (tests/test_settings.py). The Content-Security-Policy, nosniff, Referrer-Policy and X-Frame-Options
headers and the sign-in throttle are in base, for every run mode.
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from config.settings.base import *  # noqa: F403
from config.settings.base import _LOCAL_SECRET_KEY, _env_bool

if not os.environ.get("HINDSIGHT_SECRET_KEY", "").strip():
    raise ImproperlyConfigured(
        "HINDSIGHT_SECRET_KEY is not set: production needs a secret key of its own, e.g. "
        "`python -c 'import secrets; print(secrets.token_urlsafe(50))'`"
    )
if os.environ["HINDSIGHT_SECRET_KEY"] == _LOCAL_SECRET_KEY:
    raise ImproperlyConfigured(
        "HINDSIGHT_SECRET_KEY is the local default key, which is public: production needs a secret key of its own"
    )
if _env_bool("HINDSIGHT_DEBUG", False):
    raise ImproperlyConfigured("HINDSIGHT_DEBUG is on: production never runs with DEBUG (unset it or set it to 0)")
if not os.environ.get("HINDSIGHT_ALLOWED_HOSTS", "").strip(" ,"):
    raise ImproperlyConfigured(
        "HINDSIGHT_ALLOWED_HOSTS is not set: list the host names the site is served under, comma separated"
    )

# Production is closed unless the operator opens it on purpose (docs/DEPLOY.md "Users and tokens"): a report shows a
# whole Spark configuration, and redaction is a pattern match, not a guarantee. HINDSIGHT_API_AUTH=open serves
# everything to anyone who reaches the site, as a History Server's UI does; the local settings default to open.
HINDSIGHT_API_AUTH = os.environ.get("HINDSIGHT_API_AUTH", "token").strip().lower()

# Cookies: sent over HTTPS only, and out of reach of page scripts (no script of the UI reads the CSRF cookie; forms
# carry the token in a hidden field).
SESSION_COOKIE_SECURE = _env_bool("HINDSIGHT_SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True

# Whether a request came over HTTPS, when TLS ends at a proxy: only a header the proxy always sets (and strips from
# clients) may say so, hence opt-in. HINDSIGHT_SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto" trusts that header when
# it is "https"; "NAME=VALUE" names another value (e.g. "X-Forwarded-Ssl=on").
_proxy_ssl_header = os.environ.get("HINDSIGHT_SECURE_PROXY_SSL_HEADER", "").strip()
if _proxy_ssl_header:
    _header_name, _, _header_value = _proxy_ssl_header.partition("=")
    SECURE_PROXY_SSL_HEADER = (
        "HTTP_" + _header_name.strip().upper().replace("-", "_"),
        _header_value.strip() or "https",
    )

# HTTP to HTTPS redirects by Django (usually the proxy's job). /healthz and /metrics stay answerable over plain HTTP
# for load balancers and Prometheus inside the network.
SECURE_SSL_REDIRECT = _env_bool("HINDSIGHT_SSL_REDIRECT", False)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
SECURE_HSTS_SECONDS = int(os.environ.get("HINDSIGHT_HSTS_SECONDS", "0"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = _env_bool("HINDSIGHT_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = _env_bool("HINDSIGHT_HSTS_PRELOAD", False)

# Origins allowed to POST (sign-in, admin, on-demand analysis) besides the site's own, e.g. when the proxy rewrites
# the Host header: "https://hindsight.example.com", comma separated.
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("HINDSIGHT_CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

# Every log record to stderr, where gunicorn and the process manager collect it. Without this, Django's default
# logging drops the traceback of a server error when DEBUG is off (it only mails ADMINS, and there are none), and
# the analyzer's INFO records (who asked for an analysis, who retried failed apps) go nowhere. Celery's worker and
# beat install their own handler on the root logger instead (worker_hijack_root_logger).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(process)d: %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["stderr"], "level": os.environ.get("HINDSIGHT_LOG_LEVEL", "INFO").strip().upper()},
}
