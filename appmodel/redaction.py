"""Hide secrets in configuration values before they enter the app model.

Spark redacts a property when ``spark.redaction.regex`` (default :data:`SPARK_DEFAULT_REDACTION_REGEX`) finds a
match in its key or in its value, and shows :data:`REDACTED` instead. We do the same, and go further because
logs written with a weaker or custom regex still reach us: extra patterns given by our operator (matched
against keys), ``-Dkey=value`` pairs inside ``spark.*.extraJavaOptions``, and passwords in ``user:password@``
URLs anywhere in a value.

Hadoop's sensitive-key patterns (:data:`HADOOP_SENSITIVE_KEY_PATTERNS`, plus the cloud-store keys of
:data:`EXTRA_SENSITIVE_KEY_PATTERNS`) apply to every key, and to a Spark ``spark.hadoop.*`` key also with that
prefix stripped, since Spark hands such keys to Hadoop without it: ``spark.hadoop.fs.azure.account.key.x`` is
redacted exactly as ``fs.azure.account.key.x`` is in a MapReduce job conf.

Patterns that come from the logs themselves (an app's ``spark.redaction.regex``, the
``hadoop.security.sensitive-config-keys`` of a job conf or of a Spark app's environment, as
``spark.hadoop.hadoop.security.sensitive-config-keys`` or among its Hadoop properties) are added to the defaults,
never in their place (:meth:`Redactor.for_app`, :func:`sensitive_key_patterns`). They are written by whoever ran
the app, so they are compiled with RE2
(linear time, no backtracking; :func:`compile_untrusted`) under a size cap; one RE2 cannot compile is refused
with ValueError and the caller ignores it with a warning (docs/DECISIONS.md). Our own and our operator's
patterns stay on Python's ``re``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import Final, Protocol

import re2  # type: ignore[import-untyped]  # google-re2: linear-time matching of patterns the logs supply

SPARK_DEFAULT_REDACTION_REGEX: Final = r"(?i)secret|password|token|access[.]key"
REDACTED: Final = "*********(redacted)"  # Spark's own replacement text (Utils.REDACTION_REPLACEMENT_TEXT)
APP_REDACTION_PROPERTY: Final = "spark.redaction.regex"
SPARK_HADOOP_PREFIX: Final = "spark.hadoop."  # Spark passes these keys to Hadoop's Configuration without it
# Hadoop 3's core-default.xml value of hadoop.security.sensitive-config-keys (ConfigRedactor matches keys only).
HADOOP_SENSITIVE_KEY_PATTERNS: Final[tuple[str, ...]] = (
    r"secret$",
    r"password$",
    r"ssl.keystore.pass$",
    r"fs.s3.*[Ss]ecret.?[Kk]ey",
    r"fs.s3a.*.server-side-encryption.key",
    r"fs.s3a.encryption.key",
    r"fs.azure\.account.key.*",
    r"credential$",
    r"oauth.*secret",
    r"oauth.*password",
    r"oauth.*token",
    r"hadoop.security.sensitive-config-keys",
)
# Secrets of cloud connectors Hadoop's list misses (keys only): GCS service-account private keys and encryption
# keys, credentials in the plural, Azure SAS tokens (fs.azure.sas.<container>.<account>). Session tokens and S3A
# secret keys of any bucket are caught by Spark's default regex (token, secret), which applies to every key too.
EXTRA_SENSITIVE_KEY_PATTERNS: Final[tuple[str, ...]] = (
    r"(?i)private[._-]?key",
    r"(?i)encryption[._-]?key$",
    r"(?i)credentials$",
    r"(?i)(^|\.)sas([._-]|$)",
)
# Patterns from a log: longer than this is no redaction regex anyone wrote by hand, and RE2's memory is capped.
MAX_UNTRUSTED_PATTERN_CHARS: Final = 1000
MAX_UNTRUSTED_PATTERNS: Final = 100  # in one sensitive-keys list; Hadoop's default has 12
SENSITIVE_KEYS_PROPERTY: Final = "hadoop.security.sensitive-config-keys"
_RE2_MAX_MEM: Final = 1 << 20

# user:password@host in any URL-ish value; the user part is kept so people can still see who connected.
_URL_PASSWORD: Final = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^:/@\s]*):(?P<password>[^@/\s]+)@")
# -Dkey=value inside JVM option strings; values may be quoted.
_JAVA_OPTION: Final = re.compile(r"""(?P<prefix>-D)(?P<key>[^=\s]+)=(?P<value>"[^"]*"|'[^']*'|\S*)""")


def _compile(pattern: str, origin: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"invalid redaction pattern {pattern!r} ({origin}): {exc}") from exc


class Searcher(Protocol):
    def search(self, text: str, /) -> object: ...


@functools.lru_cache(maxsize=256)  # every app of a cluster repeats its cluster's list
def compile_untrusted(pattern: str, origin: str) -> Searcher:
    """``pattern`` from a log compiled for RE2 (linear time); ValueError naming ``origin`` if it is too long or
    RE2 cannot compile it (backreferences, lookarounds, too large a program)."""
    if len(pattern) > MAX_UNTRUSTED_PATTERN_CHARS:
        raise ValueError(f"pattern of {len(pattern)} characters ({origin}): over {MAX_UNTRUSTED_PATTERN_CHARS}")
    options = re2.Options()
    options.max_mem = _RE2_MAX_MEM
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        raise ValueError(f"pattern {pattern[:80]!r} ({origin}) is not supported by RE2: {exc}") from exc


def sensitive_key_patterns(value: str, origin: str) -> tuple[list[Searcher], list[str]]:
    """The patterns of a ``hadoop.security.sensitive-config-keys`` value (comma-separated, as Hadoop splits it)
    compiled with RE2, and a warning for each one ignored (not RE2, too long, past :data:`MAX_UNTRUSTED_PATTERNS`).
    Hadoop's defaults are left out: they always apply anyway."""
    patterns = [p.strip() for p in value.split(",") if p.strip() and p.strip() not in HADOOP_SENSITIVE_KEY_PATTERNS]
    warnings: list[str] = []
    if len(patterns) > MAX_UNTRUSTED_PATTERNS:
        warnings.append(f"{origin}: {len(patterns)} patterns; only the first {MAX_UNTRUSTED_PATTERNS} are applied")
    usable: list[Searcher] = []
    for pattern in dict.fromkeys(patterns[:MAX_UNTRUSTED_PATTERNS]):
        try:
            usable.append(compile_untrusted(pattern, origin))
        except ValueError as exc:  # the built-in patterns still apply
            warnings.append(f"ignored a pattern: {exc}")
    return usable, warnings


class Redactor:
    """Decides, for one (key, value) property, whether to show the value or :data:`REDACTED`.

    ``key_and_value`` patterns (Spark's default and the app's own ``spark.redaction.regex``) redact when they
    match the key or the value, as Spark does; ``extra_patterns`` from our configuration, Hadoop's sensitive-key
    patterns and ``untrusted_key_patterns`` (a job conf's own, compiled with RE2) match keys only. A
    ``spark.hadoop.*`` key is also tried with the prefix stripped.
    """

    __slots__ = ("_key_and_value", "_key_only")

    def __init__(
        self,
        extra_patterns: Sequence[str] = (),
        *,
        key_and_value: Sequence[str] = (),
        untrusted_key_patterns: Sequence[Searcher] = (),
    ) -> None:
        self._key_only: tuple[Searcher, ...] = (
            *(_compile(p, "extra redaction pattern") for p in extra_patterns),
            *_DEFAULT_KEY_PATTERNS,
            *untrusted_key_patterns,
        )
        self._key_and_value: tuple[Searcher, ...] = (
            _compile(SPARK_DEFAULT_REDACTION_REGEX, "Spark default"),
            *(compile_untrusted(p, APP_REDACTION_PROPERTY) for p in key_and_value),
        )

    def with_app_regex(self, app_regex: str) -> Redactor:
        """This redactor plus the app's own ``spark.redaction.regex`` (compiled with RE2); raises ValueError if RE2
        cannot compile it."""
        clone = Redactor.__new__(Redactor)
        clone._key_only = self._key_only
        clone._key_and_value = (*self._key_and_value, compile_untrusted(app_regex, APP_REDACTION_PROPERTY))
        return clone

    def for_app(
        self, spark_pairs: Sequence[tuple[str, str]], hadoop_pairs: Sequence[tuple[str, str]] = ()
    ) -> tuple[Redactor, list[str]]:
        """This redactor plus what a Spark app's environment adds, and warnings for what is ignored: its
        ``spark.redaction.regex`` (keys and values) and the patterns of its
        ``spark.hadoop.hadoop.security.sensitive-config-keys`` or Hadoop property
        ``hadoop.security.sensitive-config-keys`` (keys only), all run on RE2, on top of the defaults."""
        redactor, warnings = self, []
        spark = dict(spark_pairs)
        app_regex = spark.get(APP_REDACTION_PROPERTY)
        if app_regex and app_regex != REDACTED:  # Spark's default regex redacts its own value
            try:
                redactor = redactor.with_app_regex(app_regex)
            except ValueError as exc:
                warnings.append(f"ignored the app's {APP_REDACTION_PROPERTY}: {exc}")
        added: list[Searcher] = []
        for origin, value in (
            (SPARK_HADOOP_PREFIX + SENSITIVE_KEYS_PROPERTY, spark.get(SPARK_HADOOP_PREFIX + SENSITIVE_KEYS_PROPERTY)),
            (SENSITIVE_KEYS_PROPERTY, dict(hadoop_pairs).get(SENSITIVE_KEYS_PROPERTY)),
        ):
            if value and value != REDACTED:
                usable, problems = sensitive_key_patterns(value, origin)
                added.extend(usable)
                warnings.extend(f"the app's {problem}" for problem in problems)
        if added:
            clone = Redactor.__new__(Redactor)
            clone._key_and_value = redactor._key_and_value
            clone._key_only = (*redactor._key_only, *dict.fromkeys(added))
            redactor = clone
        return redactor, warnings

    def is_secret_key(self, key: str) -> bool:
        if key.startswith(SPARK_HADOOP_PREFIX) and self._is_secret_key(key[len(SPARK_HADOOP_PREFIX) :]):
            return True
        return self._is_secret_key(key)

    def _is_secret_key(self, key: str) -> bool:
        return _matches(self._key_and_value, key) or _matches(self._key_only, key)

    def redact(self, key: str, value: str) -> str:
        if self.is_secret_key(key) or _matches(self._key_and_value, value):
            return REDACTED
        if "-D" in value:  # spark.*.extraJavaOptions, and commands such as sun.java.command that embed them
            value = self._redact_java_options(value)
        if "@" in value:
            value = redact_url_passwords(value)
        return value

    def redact_pairs(self, pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
        return {key: self.redact(key, value) for key, value in pairs}

    def _redact_java_options(self, options: str) -> str:
        def replace(match: re.Match[str]) -> str:
            key, value = match.group("key"), match.group("value")
            if self.is_secret_key(key) or _matches(self._key_and_value, value):
                return f"-D{key}={REDACTED}"
            return match.group(0)

        return _JAVA_OPTION.sub(replace, options)


_DEFAULT_KEY_PATTERNS: Final[tuple[re.Pattern[str], ...]] = tuple(
    re.compile(p) for p in (*HADOOP_SENSITIVE_KEY_PATTERNS, *EXTRA_SENSITIVE_KEY_PATTERNS)
)


def _matches(patterns: tuple[Searcher, ...], text: str) -> bool:
    """Whether any pattern matches ``text``; short texts are cached: every app of a cluster repeats its keys."""
    if len(text) > _CACHED_TEXT_MAX:
        return any(p.search(text) for p in patterns)
    return _matches_cached(patterns, text)


_CACHED_TEXT_MAX: Final = 200  # keys and most values; long ones (classpaths) are searched each time


@functools.lru_cache(maxsize=1 << 15)
def _matches_cached(patterns: tuple[Searcher, ...], text: str) -> bool:
    return any(p.search(text) for p in patterns)


def redact_url_passwords(text: str) -> str:
    """Replace the password of every ``scheme://user:password@`` in text."""
    return _URL_PASSWORD.sub(lambda m: f"{m.group('scheme')}{m.group('user')}:{REDACTED}@", text)


# Masking secrets wherever a source, its parameters or its errors are shown or stored (the web UI masks with
# the very same code as the sources service).
MASK: Final = "********"
_USERINFO: Final = re.compile(r"(?<=//)[^/@\s]+@")


def mask_secrets(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value and every ``user:pass@`` of a URL replaced by the mask."""
    text = _USERINFO.sub(f"{MASK}@", text)
    for secret in sorted({str(s) for s in secrets if s}, key=len, reverse=True):  # longest first: one may hold another
        text = text.replace(secret, MASK)
    return text
