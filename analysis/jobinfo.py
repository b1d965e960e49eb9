"""Job type, scheduler linkage and job template key of one app, from its configuration (pure; no Django).

``job_info(conf, app_name=, user=, app_type=, config=)`` works alike for MapReduce (``conf`` is the job conf) and
Spark (``conf`` is :func:`spark_conf` of the app's environment). The defaults live in ``jobinfo_defaults.yaml``;
``load_jobinfo_config(path_or_mapping)`` overlays an operator's YAML (the ``HINDSIGHT_JOBINFO_FILE`` setting) and
refuses unknown keys, wrong types, bad regexes and bad templates with a message that starts with the key.

**Where keys are looked up.** In ``conf``; then in the ``-Dkey=value`` pairs of ``spark.driver.extraJavaOptions``
(shell quoting understood, a repeated key's last value wins, as in the JVM), which is where Azkaban, and anyone
using ``--driver-java-options``, puts scheduler ids for Spark; then as ``spark.<key>``, because Spark drops
``--conf`` properties that do not start with ``spark.`` (so ``spark.airflow.ctx.dag_id`` works). A direct key wins
over a ``-D`` pair. ``$app_name``, ``$user`` and ``$app_type`` are ours; incoming keys starting with ``$`` are ignored.

**Job type** (Dr. Elephant's ``JobTypeConf.xml`` semantics): per app type, the first rule, in order, whose key regex
fully matches a key the app has and whose value regex (default ``.*``) fully matches that key's value wins, else
the app type's default (MapReduce: HadoopJava; Spark: Spark). Spark vs PySpark vs Spark SQL is about the *driver
program*, the thing a user rewrites, never about which APIs it happens to call:

- *Spark SQL* when the driver is a SQL front end: ``sun.java.command`` (a JVM system property in every event log)
  names the spark-sql CLI, the Thrift JDBC/ODBC server or the Kyuubi engine, or the app carries their default names.
- *Hive* when the driver is Hive on Spark's remote driver (its program is a Hive query).
- *PySpark* when the driver is Python: ``spark.yarn.isPython=true``; ``sun.java.command`` runs ``PythonRunner``,
  ``pyspark-shell`` (a Python process that started the JVM) or a ``.py`` primary resource; a non-empty
  ``spark.submit.pyFiles``; or py4j on ``spark.executorEnv.PYTHONPATH``.
- *Spark* otherwise (Scala/Java, spark-shell, notebooks whose language cannot be told).

Not used, on evidence from the reference logs: the mere presence of ``spark.submit.pyFiles`` (Spark 3+ writes it,
empty, for every app, spark-shell included), and ``spark.sql.*`` settings (every SparkSession sets
``spark.sql.catalogImplementation``; a Scala job using DataFrames is still a Scala job). SQL rules come first, so
``pyspark`` running the Thrift server is Spark SQL.

**Scheduler.** Schedulers are tried in order (Azkaban, Oozie, Airflow, OpenLineage, then the operator's own); the
first whose ``requires`` fields all resolve is the app's, and every field that resolves is kept. Unlike Dr.
Elephant, which calls an app ad hoc when any of its four ids is missing, a partly known linkage is kept (an Oozie
action whose workflow name is unknown still has its workflow run). An app no scheduler claims is *ad hoc*:
``scheduler`` None and every id and URL empty. Ids and URLs are built from templates in the YAML (see its header).

**Untrusted values.** Values are read up to 64 KiB (a ``-D`` pair further into the JVM options is not seen),
whitespace characters made spaces, other control and format characters (Unicode category C) removed, and trimmed;
a value that redaction replaced (``*********(redacted)``) counts as absent, so it can never become an id that
unrelated apps share. Ids are at most 255 characters and job names 255 (longer ids keep a prefix and a hash, so
two long ids never merge; names are cut); URLs must be http(s) with a host, no credentials and no whitespace, at
most 800 characters, else they are dropped (an id may still be the raw value: it is data, shown escaped).

**Job template key** (groups the runs of one recurring job): ``<app type>:<scheduler>:<job definition id>`` when
the scheduler gave a job definition id, else ``<app type>:@<user>:<normalized app name>``: the name with app ids,
UUIDs, dates, epoch timestamps, long hex ids and standalone numbers replaced by ordered, configurable patterns and
whitespace collapsed. The user is part of an unscheduled key because two users' ``daily_report`` are two jobs
whose runtimes must not be compared; a job definition is one job whoever runs it, so a scheduled key has no user.
The app type is in both, since one scheduled task can launch a Spark app and MapReduce jobs that must not be mixed.
Keys longer than ``template.max_length`` (default 200) keep a prefix and end in ``#`` and 16 hex digits of their
SHA-256, so they stay deterministic and distinct.
"""

from __future__ import annotations

import functools
import hashlib
import re
import shlex
import unicodedata
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from appmodel import Environment
from appmodel.redaction import REDACTED
from heuristics.config import safe_load_yaml

DEFAULTS_PATH: Final = Path(__file__).with_name("jobinfo_defaults.yaml")

FIELDS: Final = (
    "flow_def_id",
    "flow_def_url",
    "flow_exec_id",
    "flow_exec_url",
    "job_def_id",
    "job_def_url",
    "job_exec_id",
    "job_exec_url",
    "job_name",
)
ID_FIELDS: Final = ("flow_def_id", "flow_exec_id", "job_def_id", "job_exec_id")
URL_FIELDS: Final = frozenset(name for name in FIELDS if name.endswith("_url"))

MAX_SCAN_CHARS: Final = 64 * 1024  # how much of any one value is read
MAX_ID_CHARS: Final = 255
MAX_NAME_CHARS: Final = 255
MAX_URL_CHARS: Final = 800
MAX_JOB_TYPE_CHARS: Final = 64
MAX_APP_NAME_CHARS: Final = 4096  # of the app name, for the template key
JAVA_OPTIONS_KEY: Final = "spark.driver.extraJavaOptions"
PSEUDO_KEYS: Final = frozenset({"$app_name", "$user", "$app_type"})

_TOP_KEYS: Final = ("job_types", "schedulers", "scheduler_order", "template")
_APP_TYPE_KEYS: Final = ("default", "rules")
_RULE_KEYS: Final = ("type", "key", "value")
_SCHEDULER_KEYS: Final = ("enabled", "requires", "params", "vars", "fields")
_MERGED_SCHEDULER_KEYS: Final = ("params", "vars", "fields")
_VAR_KEYS: Final = ("key", "match")
_TEMPLATE_KEYS: Final = ("max_length", "patterns", "extra_patterns")
_PATTERN_KEYS: Final = ("name", "regex", "replace")
_SCHEDULER_NAME: Final = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_APP_TYPE_NAME: Final = re.compile(r"[A-Z][A-Z0-9_]{0,31}")
_REFERENCE: Final = re.compile(r"\{\{|\}\}|\{([^{}|]*)(?:\|([^{}]*))?\}|[{}]")
_FILTERS: Final[Mapping[str, Callable[[str], str]]] = {"url": lambda value: urllib.parse.quote(value, safe="")}
_REGEX_META: Final = frozenset(".^$*+?{}[]\\|()")
_WHITESPACE: Final = re.compile(r"\s+")


class JobInfoConfigError(ValueError):
    """Bad job-info configuration; the message starts with the offending key."""


@dataclass(frozen=True, slots=True)
class JobInfo:
    """What kind of job an app is, which scheduled flow it belongs to, and which recurring job it is a run of."""

    job_type: str
    scheduler: str | None = None  # None: ad hoc
    flow_def_id: str = ""
    flow_def_url: str = ""
    flow_exec_id: str = ""
    flow_exec_url: str = ""
    job_def_id: str = ""
    job_def_url: str = ""
    job_exec_id: str = ""
    job_exec_url: str = ""
    job_name: str = ""
    template: str = ""

    @property
    def is_adhoc(self) -> bool:
        return self.scheduler is None

    def flow_dict(self) -> dict[str, str | None]:
        """The scheduler and its ids, URLs and job name (the ``flow`` object of the JSON output)."""
        return {"scheduler": self.scheduler, **{name: getattr(self, name) for name in FIELDS}}


# ----------------------------------------------------------------------------------------------------- config types


@dataclass(frozen=True, slots=True)
class JobTypeRule:
    job_type: str
    key: re.Pattern[str]
    value: re.Pattern[str]
    literal_key: str | None  # the key itself when the regex is a plain name: looked up instead of scanned


@dataclass(frozen=True, slots=True)
class AppTypeRules:
    default: str
    rules: tuple[JobTypeRule, ...]


@dataclass(frozen=True, slots=True)
class VarSpec:
    keys: tuple[str, ...]
    match: re.Pattern[str] | None


@dataclass(frozen=True, slots=True)
class Reference:
    name: str
    filter: Callable[[str], str] | None


@dataclass(frozen=True, slots=True)
class Template:
    source: str
    parts: tuple[str | Reference, ...]


@dataclass(frozen=True, slots=True)
class SchedulerSpec:
    name: str
    requires: tuple[str, ...]
    params: Mapping[str, str]  # only the params that are set
    vars: Mapping[str, VarSpec]
    fields: Mapping[str, tuple[Template, ...]]


@dataclass(frozen=True, slots=True)
class StripPattern:
    name: str
    regex: re.Pattern[str]
    replace: str

    @property
    def template(self) -> str:
        """``replace`` as a literal ``re.sub`` replacement (backslashes mean nothing there)."""
        return self.replace.replace("\\", "\\\\")


@dataclass(frozen=True, slots=True)
class JobInfoConfig:
    job_types: Mapping[str, AppTypeRules]
    schedulers: tuple[SchedulerSpec, ...]
    patterns: tuple[StripPattern, ...]
    template_max_length: int = 200
    source: str = field(default=str(DEFAULTS_PATH), compare=False)


# ----------------------------------------------------------------------------------------------------- job_info


def spark_conf(environment: Environment) -> dict[str, str]:
    """The flat configuration :func:`job_info` reads for a Spark app: JVM system properties under Spark properties.

    System properties carry ``sun.java.command`` (what the driver runs) and any ``-D`` pairs the driver JVM got.
    """
    return {**environment.system_properties, **environment.spark_properties}


def job_info(conf: Mapping[str, str], *, app_name: str, user: str, app_type: str, config: JobInfoConfig) -> JobInfo:
    """Job type, scheduler ids and template key of one app. Never raises on bad data."""
    view = _ConfView(conf, app_name=app_name, user=user, app_type=app_type)
    job_type = _job_type(view, config.job_types.get(app_type.upper()))
    scheduler: str | None = None
    values: dict[str, str] = {}
    for spec in config.schedulers:
        resolved = _resolve_scheduler(spec, view)
        if all(resolved.get(name) for name in spec.requires):
            scheduler, values = spec.name, resolved
            break
    template = _template_key(
        app_type=app_type,
        scheduler=scheduler,
        job_def_id=values.get("job_def_id", ""),
        user=user,
        app_name=app_name,
        config=config,
    )
    return JobInfo(job_type=job_type, scheduler=scheduler, template=template, **values)


def normalize_app_name(app_name: str, config: JobInfoConfig) -> str:
    """The app name with run-specific parts replaced by the template patterns, whitespace collapsed ("-" if empty)."""
    name = clean_text(app_name[:MAX_APP_NAME_CHARS])
    for pattern in config.patterns:
        name = pattern.regex.sub(pattern.template, name)
    return _WHITESPACE.sub(" ", name).strip() or "-"


def clean_text(value: str) -> str:
    """At most :data:`MAX_SCAN_CHARS` of value: whitespace as spaces, control and format characters dropped, trimmed."""
    value = value[:MAX_SCAN_CHARS]
    if not value.isprintable():  # fast path: most values are plain
        value = "".join(
            " " if ch.isspace() else ch for ch in value if ch.isspace() or not unicodedata.category(ch).startswith("C")
        )
    return value.strip()


def java_options(options: str) -> dict[str, str]:
    """``-Dkey=value`` pairs of a JVM options string; shell quotes understood, a repeated key's last value wins."""
    text = options[:MAX_SCAN_CHARS]
    if "-D" not in text:
        return {}
    try:
        tokens = shlex.split(text, posix=True)
    except ValueError:  # unbalanced quotes: take the words as they are
        tokens = text.split()
    pairs: dict[str, str] = {}
    for token in tokens:
        if token.startswith("-D") and len(token) > 2:
            key, _, value = token[2:].partition("=")
            if key and not any(ch.isspace() for ch in key):
                pairs[key] = value
    return pairs


class _ConfView:
    """Looks keys up in conf, then the driver's -D pairs, then as spark.<key>; values cleaned, None when empty."""

    __slots__ = ("_conf", "_java", "_pseudo")

    def __init__(self, conf: Mapping[str, str], *, app_name: str, user: str, app_type: str) -> None:
        self._conf = conf
        raw_options = conf.get(JAVA_OPTIONS_KEY)
        self._java = java_options(raw_options) if isinstance(raw_options, str) else {}
        self._pseudo = {"$app_name": app_name, "$user": user, "$app_type": app_type}

    def raw(self, key: str) -> str | None:
        if key.startswith("$"):
            return self._pseudo.get(key)
        value = self._conf.get(key)
        if value is None:
            value = self._java.get(key)
        if value is None and not key.startswith("spark."):
            value = self._conf.get("spark." + key)
        return value if isinstance(value, str) else None

    def get(self, key: str) -> str | None:
        value = self.raw(key)
        if value is None:
            return None
        value = clean_text(value)
        return value if value and value != REDACTED else None

    def items(self) -> list[tuple[str, str]]:
        """Every (key, raw value) a job-type rule may match: -D pairs, then conf, then ours."""
        merged: dict[str, str] = dict(self._java)
        merged.update((k, v) for k, v in self._conf.items() if isinstance(k, str) and isinstance(v, str))
        for key in [k for k in merged if k.startswith("$")]:
            del merged[key]
        merged.update(self._pseudo)
        return list(merged.items())


def _job_type(view: _ConfView, rules: AppTypeRules | None) -> str:
    if rules is None:
        return "Unknown"
    scanned: list[tuple[str, str]] | None = None
    for rule in rules.rules:
        if rule.literal_key is not None:
            value = view.raw(rule.literal_key)
            if value is not None and rule.value.fullmatch(value[:MAX_SCAN_CHARS]):
                return rule.job_type
            continue
        if scanned is None:
            scanned = view.items()
        for key, value in scanned:
            if rule.key.fullmatch(key) and rule.value.fullmatch(value[:MAX_SCAN_CHARS]):
                return rule.job_type
    return rules.default


def _resolve_scheduler(spec: SchedulerSpec, view: _ConfView) -> dict[str, str]:
    variables: dict[str, str | None] = {}

    def lookup(name: str) -> str | None:
        if name in spec.vars:
            if name not in variables:
                variables[name] = _resolve_var(spec.vars[name], view)
            return variables[name]
        if name in spec.params:
            return spec.params[name]
        return view.get(name)

    values: dict[str, str] = {}
    for name, alternatives in spec.fields.items():
        for template in alternatives:
            rendered = _render(template, lookup)
            value = _bound_field(name, rendered) if rendered is not None else ""
            if value:
                values[name] = value
                break
    return values


def _resolve_var(spec: VarSpec, view: _ConfView) -> str | None:
    for key in spec.keys:
        value = view.get(key)
        if value is None:
            continue
        if spec.match is None:
            return value
        found = spec.match.search(value)
        if found is None:
            continue
        if "value" in found.re.groupindex:
            result = found.group("value")
        elif found.re.groups:
            result = found.group(1)
        else:
            result = found.group(0)
        if result:
            return result.strip() or None
    return None


def _render(template: Template, lookup: Callable[[str], str | None]) -> str | None:
    out: list[str] = []
    for part in template.parts:
        if isinstance(part, str):
            out.append(part)
            continue
        value = lookup(part.name)
        if not value:
            return None
        out.append(part.filter(value) if part.filter else value)
    return "".join(out)


def _bound_field(name: str, value: str) -> str:
    value = clean_text(value)
    if name in URL_FIELDS:
        return value if _is_safe_url(value) else ""
    if name == "job_name":
        return value if len(value) <= MAX_NAME_CHARS else value[: MAX_NAME_CHARS - 1] + "…"
    return _shorten(value, MAX_ID_CHARS)


def _is_safe_url(url: str) -> bool:
    if not url or len(url) > MAX_URL_CHARS or any(ch.isspace() for ch in url):
        return False
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname) and "@" not in parts.netloc


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{text[: limit - 17]}#{digest}"


def _template_key(
    *, app_type: str, scheduler: str | None, job_def_id: str, user: str, app_name: str, config: JobInfoConfig
) -> str:
    kind = _WHITESPACE.sub("", clean_text(app_type)).lower() or "unknown"
    if scheduler and job_def_id:
        key = f"{kind}:{scheduler}:{job_def_id}"
    else:
        # % and : are escaped so that no user name can make two (user, name) pairs read alike.
        who = clean_text(user).replace("%", "%25").replace(":", "%3A")
        key = f"{kind}:@{who}:{normalize_app_name(app_name, config)}"
    return _shorten(key, config.template_max_length)


# ----------------------------------------------------------------------------------------------------- loading


def load_jobinfo_config(source: str | Path | Mapping[str, Any] | None = None) -> JobInfoConfig:
    """The defaults overlaid by an operator's YAML file or mapping; JobInfoConfigError names the bad key."""
    defaults = _read_yaml(DEFAULTS_PATH)
    if source is None:
        user: Mapping[str, Any] = {}
        origin = str(DEFAULTS_PATH)
    elif isinstance(source, Mapping):
        user, origin = source, "<mapping>"
    else:
        user, origin = _read_yaml(Path(source)), str(source)
    return _build(_merge(defaults, user), origin)


@functools.lru_cache(maxsize=1)
def default_config() -> JobInfoConfig:
    """The built-in configuration, loaded once."""
    return load_jobinfo_config(None)


def configured(path: str | Path | None) -> JobInfoConfig:
    """The configuration of ``path`` (None: the defaults), loaded again only when the file changes."""
    if path is None:
        return default_config()
    try:
        mtime = Path(path).stat().st_mtime_ns
    except OSError:
        mtime = -1  # load_jobinfo_config says what is wrong with it
    return _configured(str(path), mtime)


@functools.lru_cache(maxsize=4)
def _configured(path: str, mtime_ns: int) -> JobInfoConfig:
    return load_jobinfo_config(path)


def _read_yaml(path: Path) -> Mapping[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = safe_load_yaml(handle)
    except OSError as exc:
        raise JobInfoConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise JobInfoConfigError(f"{path}: not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise JobInfoConfigError(f"{path}: expected a mapping with {', '.join(_TOP_KEYS)}, got {_kind(data)}")
    return data


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _mapping(value: object, key: str, allowed: Sequence[str] | None = None) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise JobInfoConfigError(f"{key}: expected a mapping, got {_kind(value)}")
    for name in value:
        if not isinstance(name, str):
            raise JobInfoConfigError(f"{key}: keys must be strings, got {name!r}")
        if allowed is not None and name not in allowed:
            raise JobInfoConfigError(f"{key}.{name}: unknown key; known keys: {', '.join(allowed)}")
    return value


def _string(value: object, key: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise JobInfoConfigError(f"{key}: expected a non-empty string, got {value!r}")
    return value


def _strings(value: object, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (_string(value, key),)
    if not isinstance(value, list) or not value:
        raise JobInfoConfigError(f"{key}: expected a string or a non-empty list of strings, got {_kind(value)}")
    return tuple(_string(item, f"{key}[{index}]") for index, item in enumerate(value))


def _regex(value: object, key: str) -> re.Pattern[str]:
    pattern = _string(value, key)
    try:
        return re.compile(pattern, re.DOTALL)
    except re.error as exc:
        raise JobInfoConfigError(f"{key}: invalid regex {pattern!r}: {exc}") from None


def _merge(defaults: Mapping[str, Any], user: Mapping[str, Any]) -> dict[str, Any]:
    """Overlay the user's settings on the defaults (shapes are checked later, except where merging needs them)."""
    if not isinstance(user, Mapping):
        raise JobInfoConfigError(f"expected a mapping with {', '.join(_TOP_KEYS)}, got {_kind(user)}")
    for name in user:
        if name not in _TOP_KEYS:
            raise JobInfoConfigError(f"{name}: unknown key; known keys: {', '.join(_TOP_KEYS)}")
    merged: dict[str, Any] = {key: defaults.get(key) for key in _TOP_KEYS}
    if "job_types" in user:
        job_types = dict(_mapping(defaults.get("job_types") or {}, "job_types"))
        for app_type, section in _mapping(user["job_types"], "job_types").items():
            base = job_types.get(app_type) or {}
            job_types[app_type] = {**base, **_mapping(section, f"job_types.{app_type}", _APP_TYPE_KEYS)}
        merged["job_types"] = job_types
    if "schedulers" in user:
        schedulers = dict(_mapping(defaults.get("schedulers") or {}, "schedulers"))
        for name, section in _mapping(user["schedulers"], "schedulers").items():
            section = _mapping(section, f"schedulers.{name}", _SCHEDULER_KEYS)
            if name in schedulers:
                combined = dict(schedulers[name])
                for part, value in section.items():
                    if part in _MERGED_SCHEDULER_KEYS:
                        combined[part] = {**(combined.get(part) or {}), **_mapping(value, f"schedulers.{name}.{part}")}
                    else:
                        combined[part] = value
                schedulers[name] = combined
            else:
                schedulers[name] = section
        merged["schedulers"] = schedulers
    if "scheduler_order" in user:
        merged["scheduler_order"] = user["scheduler_order"]
    if "template" in user:
        merged["template"] = {
            **(defaults.get("template") or {}),
            **_mapping(user["template"], "template", _TEMPLATE_KEYS),
        }
    return merged


def _build(data: Mapping[str, Any], origin: str) -> JobInfoConfig:
    job_types = {
        app_type: _build_app_type(app_type, section)
        for app_type, section in _mapping(data.get("job_types") or {}, "job_types").items()
    }
    specs = {
        name: _build_scheduler(name, section)
        for name, section in _mapping(data.get("schedulers") or {}, "schedulers").items()
    }
    order: Sequence[str] = list(specs)
    if data.get("scheduler_order") is not None:
        order = _strings(data["scheduler_order"], "scheduler_order")
        for index, name in enumerate(order):
            if name not in specs:
                raise JobInfoConfigError(f"scheduler_order[{index}]: no scheduler named {name!r}")
        order = [*order, *(name for name in specs if name not in order)]
    schedulers = tuple(spec for name in order if (spec := specs[name]) is not None)
    template = _mapping(data.get("template") or {}, "template", _TEMPLATE_KEYS)
    max_length = template.get("max_length", 200)
    if not isinstance(max_length, int) or isinstance(max_length, bool) or not 40 <= max_length <= 255:
        raise JobInfoConfigError(f"template.max_length: expected a whole number from 40 to 255, got {max_length!r}")
    patterns = (
        *_build_patterns(template.get("extra_patterns") or [], "template.extra_patterns"),
        *_build_patterns(template.get("patterns") or [], "template.patterns"),
    )
    return JobInfoConfig(
        job_types=job_types, schedulers=schedulers, patterns=patterns, template_max_length=max_length, source=origin
    )


def _build_app_type(app_type: str, section: object) -> AppTypeRules:
    key = f"job_types.{app_type}"
    if not _APP_TYPE_NAME.fullmatch(app_type):
        raise JobInfoConfigError(f"{key}: app types are upper-case names like SPARK or MAPREDUCE")
    body = _mapping(section, key, _APP_TYPE_KEYS)
    default = _string(body.get("default", "Unknown"), f"{key}.default")
    rules_data = body.get("rules") or []
    if not isinstance(rules_data, list):
        raise JobInfoConfigError(f"{key}.rules: expected a list, got {_kind(rules_data)}")
    rules = []
    for index, item in enumerate(rules_data):
        where = f"{key}.rules[{index}]"
        rule = _mapping(item, where, _RULE_KEYS)
        for required in ("type", "key"):
            if required not in rule:
                raise JobInfoConfigError(f"{where}.{required}: missing")
        job_type = _string(rule["type"], f"{where}.type")
        if len(job_type) > MAX_JOB_TYPE_CHARS:
            raise JobInfoConfigError(f"{where}.type: at most {MAX_JOB_TYPE_CHARS} characters")
        key_regex = _regex(rule["key"], f"{where}.key")
        value_regex = _regex(rule.get("value", ".*"), f"{where}.value")
        rules.append(JobTypeRule(job_type, key_regex, value_regex, _literal(key_regex.pattern)))
    if len(default) > MAX_JOB_TYPE_CHARS:
        raise JobInfoConfigError(f"{key}.default: at most {MAX_JOB_TYPE_CHARS} characters")
    return AppTypeRules(default=default, rules=tuple(rules))


def _literal(pattern: str) -> str | None:
    """The plain key a regex such as ``pig\\.script`` stands for, or None when it really is a pattern."""
    unescaped = re.sub(r"\\(.)", r"\1", pattern)
    escaped_only = re.sub(r"\\[.$\-]", "", pattern)
    return None if any(ch in _REGEX_META for ch in escaped_only) else unescaped


def _build_scheduler(name: str, section: object) -> SchedulerSpec | None:
    key = f"schedulers.{name}"
    if not _SCHEDULER_NAME.fullmatch(name):
        raise JobInfoConfigError(f"{key}: scheduler names are lower-case letters, digits, _ and -, at most 32")
    body = _mapping(section, key, _SCHEDULER_KEYS)
    enabled = body.get("enabled", True)
    if not isinstance(enabled, bool):
        raise JobInfoConfigError(f"{key}.enabled: expected true or false, got {enabled!r}")
    params: dict[str, str] = {}
    declared = frozenset(_mapping(body.get("params") or {}, f"{key}.params"))  # null ones too: set in a user file
    for param, value in _mapping(body.get("params") or {}, f"{key}.params").items():
        where = f"{key}.params.{param}"
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            raise JobInfoConfigError(f"{where}: expected a string or null, got {_kind(value)}")
        if param.endswith("url"):
            value = value.rstrip("/")
            if not _is_safe_url(value):
                raise JobInfoConfigError(f"{where}: expected an http(s) URL without credentials, got {value!r}")
        params[param] = value
    variables: dict[str, VarSpec] = {}
    for var, spec in _mapping(body.get("vars") or {}, f"{key}.vars").items():
        where = f"{key}.vars.{var}"
        if "." in var or var.startswith("$") or var in declared:
            raise JobInfoConfigError(f"{where}: a var name has no dot or $ and is not also a param name")
        spec_body = _mapping(spec, where, _VAR_KEYS)
        if "key" not in spec_body:
            raise JobInfoConfigError(f"{where}.key: missing")
        keys = _strings(spec_body["key"], f"{where}.key")
        match = _regex(spec_body["match"], f"{where}.match") if spec_body.get("match") is not None else None
        variables[var] = VarSpec(keys=keys, match=match)
    fields: dict[str, tuple[Template, ...]] = {}
    for field_name, value in _mapping(body.get("fields") or {}, f"{key}.fields", FIELDS).items():
        where = f"{key}.fields.{field_name}"
        fields[field_name] = tuple(
            _parse_template(text, f"{where}[{index}]" if isinstance(value, list) else where, variables, declared)
            for index, text in enumerate(_strings(value, where))
        )
    requires = _strings(body.get("requires", list(ID_FIELDS)), f"{key}.requires")
    for index, required in enumerate(requires):
        if required not in FIELDS:
            known = ", ".join(FIELDS)
            raise JobInfoConfigError(f"{key}.requires[{index}]: unknown field {required!r}; fields: {known}")
        if required not in fields:
            raise JobInfoConfigError(f"{key}.requires[{index}]: {required!r} has no template in {key}.fields")
    if not fields:
        raise JobInfoConfigError(f"{key}.fields: missing; a scheduler needs at least one field template")
    if not enabled:
        return None
    return SchedulerSpec(name=name, requires=requires, params=params, vars=variables, fields=fields)


def _parse_template(text: str, key: str, variables: Mapping[str, VarSpec], declared_params: frozenset[str]) -> Template:
    parts: list[str | Reference] = []
    position = 0
    for match in _REFERENCE.finditer(text):
        parts.append(text[position : match.start()])
        position = match.end()
        token = match.group(0)
        if token in ("{{", "}}"):
            parts.append(token[0])
            continue
        if token in ("{", "}"):
            raise JobInfoConfigError(f"{key}: unbalanced {token!r} in {text!r}; write {token * 2} for a literal brace")
        name = (match.group(1) or "").strip()
        if not name:
            raise JobInfoConfigError(f"{key}: empty reference in {text!r}")
        filter_name = match.group(2)
        if filter_name is not None and filter_name.strip() not in _FILTERS:
            raise JobInfoConfigError(f"{key}: unknown filter {filter_name!r} in {text!r}; filters: url")
        if name.startswith("$"):
            if name not in PSEUDO_KEYS:
                known = ", ".join(sorted(PSEUDO_KEYS))
                raise JobInfoConfigError(f"{key}: unknown {name!r} in {text!r}; known: {known}")
        elif "." not in name and name not in variables and name not in declared_params:
            raise JobInfoConfigError(
                f"{key}: {{{name}}} in {text!r} is neither a var nor a param of this scheduler "
                "(configuration keys are written with their dots)"
            )
        parts.append(Reference(name, _FILTERS[filter_name.strip()] if filter_name is not None else None))
    parts.append(text[position:])
    return Template(source=text, parts=tuple(part for part in parts if part != ""))


def _build_patterns(items: object, key: str) -> list[StripPattern]:
    if not isinstance(items, list):
        raise JobInfoConfigError(f"{key}: expected a list, got {_kind(items)}")
    patterns = []
    for index, item in enumerate(items):
        where = f"{key}[{index}]"
        body = _mapping(item, where, _PATTERN_KEYS)
        if "regex" not in body:
            raise JobInfoConfigError(f"{where}.regex: missing")
        name = _string(body.get("name", f"pattern {index}"), f"{where}.name")
        regex = _regex(body["regex"], f"{where}.regex")
        if regex.fullmatch("") is not None:
            raise JobInfoConfigError(f"{where}.regex: matches the empty string, which would rewrite every name")
        replace = _string(body.get("replace", ""), f"{where}.replace", allow_empty=True)
        patterns.append(StripPattern(name=name, regex=regex, replace=replace))
    return patterns
