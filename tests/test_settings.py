"""The settings modules per run mode (config/settings/): production refuses to start unsafe, and serves under gunicorn.

Every settings module is loaded in a subprocess with a controlled environment (none of the test run's HINDSIGHT_*
variables), since settings are read once per process.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from fault_proxy import free_port
from faults.faultkit import start_process, stop, wait_until

REPO = Path(__file__).resolve().parents[1]
LOCAL_KEY = "hindsight-local-insecure-key-change-me"
# What `manage.py check --deploy` still says under the production settings, by design (docs/SOURCES.md "Run modes").
DEPLOY_WARNINGS_LEFT = {"security.W004", "security.W008"}

SHOW_SETTINGS = """
import json
import django
from django.conf import settings

django.setup()
print(json.dumps({
    name: getattr(settings, name)
    for name in [
        "SETTINGS_MODULE", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE",
        "SESSION_COOKIE_HTTPONLY", "CSRF_COOKIE_HTTPONLY", "SECURE_PROXY_SSL_HEADER", "SECURE_SSL_REDIRECT",
        "SECURE_HSTS_SECONDS", "PASSWORD_HASHERS", "BASE_DIR", "DATABASES", "HINDSIGHT_API_AUTH",
    ]
}, default=str))
"""


def clean_env(settings_module: str, **variables: str) -> dict[str, str]:
    """This process's environment without Hindsight's variables or a database, plus ``variables``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("HINDSIGHT_") and key not in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL", "WEB_CONCURRENCY"}
    }
    return env | {"DJANGO_SETTINGS_MODULE": settings_module, "PYTHONUNBUFFERED": "1"} | variables


def production_env(**variables: str) -> dict[str, str]:
    """A production environment that loads: a key of its own, DEBUG unset, one allowed host; ``variables`` on top."""
    loads = {"HINDSIGHT_SECRET_KEY": secrets.token_urlsafe(50), "HINDSIGHT_ALLOWED_HOSTS": "127.0.0.1"}
    return clean_env("config.settings.production", **(loads | variables))


def load(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SHOW_SETTINGS], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )


def loaded(env: dict[str, str]) -> dict[str, object]:
    result = load(env)
    assert result.returncode == 0, result.stderr
    answer: dict[str, object] = json.loads(result.stdout)
    return answer


def refusal(env: dict[str, str]) -> str:
    """The ImproperlyConfigured message of a settings module that refuses to load under ``env``."""
    result = load(env)
    assert result.returncode != 0, result.stdout
    last = result.stderr.strip().splitlines()[-1]
    prefix = "django.core.exceptions.ImproperlyConfigured: "
    assert last.startswith(prefix), result.stderr
    return last.removeprefix(prefix)


@pytest.mark.parametrize("key", [None, "", "  "], ids=["missing", "empty", "blank"])
def test_production_settings_refuse_to_load_without_a_secret_key(key: str | None) -> None:
    env = production_env()
    del env["HINDSIGHT_SECRET_KEY"]
    if key is not None:
        env["HINDSIGHT_SECRET_KEY"] = key
    assert refusal(env).startswith("HINDSIGHT_SECRET_KEY is not set")


def test_production_settings_refuse_to_load_with_the_local_default_key() -> None:
    message = refusal(production_env(HINDSIGHT_SECRET_KEY=LOCAL_KEY))
    assert message.startswith("HINDSIGHT_SECRET_KEY is the local default key")


@pytest.mark.parametrize("debug", ["1", "true", "on", "yes"])
def test_production_settings_refuse_to_load_with_debug_on(debug: str) -> None:
    assert refusal(production_env(HINDSIGHT_DEBUG=debug)).startswith("HINDSIGHT_DEBUG is on")


@pytest.mark.parametrize("hosts", [None, "", " , "], ids=["missing", "empty", "commas"])
def test_production_settings_refuse_to_load_without_allowed_hosts(hosts: str | None) -> None:
    env = production_env()
    del env["HINDSIGHT_ALLOWED_HOSTS"]
    if hosts is not None:
        env["HINDSIGHT_ALLOWED_HOSTS"] = hosts
    assert refusal(env).startswith("HINDSIGHT_ALLOWED_HOSTS is not set")


def test_production_settings_load_with_a_key_of_their_own_and_debug_off_with_secure_httponly_cookies() -> None:
    key = secrets.token_urlsafe(50)
    settings = loaded(production_env(HINDSIGHT_SECRET_KEY=key, HINDSIGHT_DEBUG="0", HINDSIGHT_ALLOWED_HOSTS="a.b,c.d"))
    assert settings["SETTINGS_MODULE"] == "config.settings.production"
    assert settings["SECRET_KEY"] == key
    assert settings["DEBUG"] is False
    assert settings["ALLOWED_HOSTS"] == ["a.b", "c.d"]
    assert settings["SESSION_COOKIE_SECURE"] is settings["CSRF_COOKIE_SECURE"] is True
    assert settings["SESSION_COOKIE_HTTPONLY"] is settings["CSRF_COOKIE_HTTPONLY"] is True
    # Trusting a forwarded header is a choice of the operator's, and so are redirects and HSTS.
    assert settings["SECURE_PROXY_SSL_HEADER"] is None
    assert settings["SECURE_SSL_REDIRECT"] is False
    assert settings["SECURE_HSTS_SECONDS"] == 0


def test_production_closes_the_site_unless_the_operator_opens_it() -> None:
    assert loaded(production_env())["HINDSIGHT_API_AUTH"] == "token"
    assert loaded(production_env(HINDSIGHT_API_AUTH="open"))["HINDSIGHT_API_AUTH"] == "open"
    assert loaded(clean_env("config.settings"))["HINDSIGHT_API_AUTH"] == "open"


def test_production_trusts_a_proxys_https_header_only_when_told_which() -> None:
    named = loaded(production_env(HINDSIGHT_SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto"))
    assert named["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    with_value = loaded(production_env(HINDSIGHT_SECURE_PROXY_SSL_HEADER="X-Forwarded-Ssl=on"))
    assert with_value["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_SSL", "on"]


def test_plain_http_installs_can_turn_secure_cookies_off() -> None:
    settings = loaded(production_env(HINDSIGHT_SECURE_COOKIES="0"))
    assert settings["SESSION_COOKIE_SECURE"] is settings["CSRF_COOKIE_SECURE"] is False


def test_the_deploy_check_under_production_settings_leaves_only_the_documented_warnings() -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=REPO,
        env=production_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    said = result.stdout + result.stderr
    left = {word.strip("():") for word in said.split() if word.startswith("(") and "." in word and word.endswith(")")}
    assert left == DEPLOY_WARNINGS_LEFT, said


# The web process's environment in docs/DEPLOY.md ("Environment"), secrets aside.
DEPLOY_MD_ENV = {
    "HINDSIGHT_ALLOWED_HOSTS": "hindsight.example.com",
    "HINDSIGHT_API_AUTH": "token",
    "HINDSIGHT_METRICS_TOKEN": secrets.token_urlsafe(32),
    "HINDSIGHT_SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto",
    "HINDSIGHT_SSL_REDIRECT": "1",
    "HINDSIGHT_HSTS_SECONDS": "31536000",
    "HINDSIGHT_HSTS_INCLUDE_SUBDOMAINS": "1",
    "HINDSIGHT_HSTS_PRELOAD": "1",
    "HINDSIGHT_LOGIN_CLIENT_IP_HEADER": "X-Forwarded-For",
}


def test_the_deploy_check_prints_no_warning_for_the_environment_docs_deploy_md_documents() -> None:
    """F15/F16: `check --deploy` warnings were neither addressed nor documented."""
    deploy_md = (REPO / "docs" / "DEPLOY.md").read_text()
    for name, value in DEPLOY_MD_ENV.items():
        assert f"{name}=..." in deploy_md if name.endswith("_TOKEN") else f"{name}={value}" in deploy_md, name
    quiet = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=production_env(**DEPLOY_MD_ENV),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert "WARNING" not in quiet.stdout + quiet.stderr
    assert "no issues" in quiet.stdout


@pytest.mark.parametrize("hosts", ["hindsight.example.com", "*", "127.0.0.1,10.0.0.5"])
def test_the_local_settings_refuse_the_public_key_when_served_under_another_host_name(hosts: str) -> None:
    """F16: with a public ALLOWED_HOSTS and no key set, the app ran on the secret key published in the source."""
    message = refusal(clean_env("config.settings", HINDSIGHT_ALLOWED_HOSTS=hosts))
    assert message.startswith("HINDSIGHT_ALLOWED_HOSTS names hosts other than this machine")
    assert loaded(clean_env("config.settings", HINDSIGHT_ALLOWED_HOSTS="localhost,127.0.0.1,[::1]"))["DEBUG"] is False


def test_config_settings_is_still_the_local_default_sqlite_in_var_with_the_local_key() -> None:
    settings = loaded(clean_env("config.settings"))
    base = loaded(clean_env("config.settings.base"))
    assert {**settings, "SETTINGS_MODULE": None} == {**base, "SETTINGS_MODULE": None}
    assert settings["SECRET_KEY"] == LOCAL_KEY
    assert settings["DEBUG"] is False
    assert settings["ALLOWED_HOSTS"] == ["127.0.0.1", "localhost"]
    assert settings["DATABASES"]["default"]["NAME"] == str(REPO / "var" / "hindsight.sqlite3")  # type: ignore[index]
    assert settings["SESSION_COOKIE_SECURE"] is False  # a browser sends it back over plain http://127.0.0.1


def test_test_settings_add_a_fast_hasher_to_the_base() -> None:
    settings = loaded(clean_env("config.settings.test"))
    base = loaded(clean_env("config.settings.base"))
    assert settings["PASSWORD_HASHERS"] == ["django.contrib.auth.hashers.MD5PasswordHasher"]
    differing = {name for name in settings if settings[name] != base[name]}
    assert differing == {"SETTINGS_MODULE", "PASSWORD_HASHERS"}


def procfile_command(process: str) -> str:
    for line in (REPO / "Procfile").read_text().splitlines():
        if line.startswith(f"{process}:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"the Procfile has no {process} process")


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return int(answer.status), answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_gunicorn_started_as_the_procfile_says_serves_healthz_and_pages_with_debug_off(tmp_path: Path) -> None:
    # A database of its own (SQLite in tmp_path, migrated under the production settings), so /healthz needs no broker.
    env = production_env(DATABASE_URL=f"sqlite:///{tmp_path / 'hindsight.sqlite3'}")
    migrate = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--verbosity", "0"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert migrate.returncode == 0, migrate.stderr
    port = free_port()
    # gunicorn and celery are found on PATH, as in an activated virtualenv; one worker is enough here.
    path = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env |= {"PORT": str(port), "PATH": path, "WEB_CONCURRENCY": "1"}
    log = tmp_path / "web.log"
    server = start_process(["bash", "-c", procfile_command("web")], log, env)
    try:
        base = f"http://127.0.0.1:{port}"

        def answers() -> bool:
            assert server.poll() is None, log.read_text(errors="replace")
            try:
                return get(f"{base}/healthz")[0] == 200
            except OSError:
                return False

        wait_until(answers, 60, "gunicorn answers /healthz")
        status, body = get(f"{base}/healthz")
        assert (status, json.loads(body)) == (200, {"status": "ok", "database": "ok", "broker": "not checked"})
        assert get(f"{base}/")[0] == 200
        missing, page = get(f"{base}/no-such-page")
        assert missing == 404
        assert "DEBUG = True" not in page
    finally:
        stop(server, group=True)
    served = log.read_text(errors="replace")
    assert "Starting gunicorn" in served
    assert '"GET /healthz HTTP/1.1" 200' in served  # the access log, on stdout


# --- one place per default ------------------------------------------------------------------------------------


def test_research_thresholds_not_set_in_the_environment_are_the_librarys_own_defaults():
    import datetime as dt
    import importlib

    from analysis.hosts import RankingConfig
    from analyzer.hosts.services import ranking_config
    from analyzer.stages.selectors import localization_settings

    localize = importlib.import_module("analysis.stages.localize")  # the package exports localize(), the function
    stages = localization_settings()
    assert (stages.alpha, stages.beta, stages.min_runs, stages.min_effect) == (
        localize.DEFAULT_ALPHA,
        localize.DEFAULT_BETA,
        localize.DEFAULT_MIN_RUNS,
        localize.DEFAULT_MIN_EFFECT,
    )
    hosts, library = ranking_config("24h", dt.datetime(2026, 1, 1, tzinfo=dt.UTC)), RankingConfig()
    assert (hosts.min_host_tasks, hosts.min_effect, hosts.alpha, hosts.extreme_z) == (
        library.min_host_tasks,
        library.min_effect,
        library.alpha,
        library.extreme_z,
    )


def test_a_research_threshold_set_in_the_environment_reaches_the_service():
    env = clean_env(
        "config.settings.base", HINDSIGHT_STAGE_LOCALIZATION_ALPHA="0.2", HINDSIGHT_HOSTS_MIN_HOST_TASKS="50"
    )
    code = (
        "import django, datetime as dt; django.setup()\n"
        "from analyzer.stages.selectors import localization_settings\n"
        "from analyzer.hosts.services import ranking_config\n"
        "end = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)\n"
        "print(localization_settings().alpha, ranking_config('24h', end).min_host_tasks)"
    )
    command = [sys.executable, "-c", code]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0.2", "50"]


def test_no_code_repeats_a_settings_default_as_a_getattr_fallback():
    """A default written twice drifts: code reads ``settings.NAME``, whose default is in config/settings/base.py."""
    import re

    repeated = re.compile(r"getattr\(settings,\s*f?[\"']HINDSIGHT_[^)]*,")
    offenders = [
        f"{path.relative_to(REPO)}:{number}"
        for package in ("analyzer", "analysis", "webui", "fetchers", "heuristics", "appmodel")
        for path in (REPO / package).rglob("*.py")
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if repeated.search(line)
    ]
    assert offenders == []
