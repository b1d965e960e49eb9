"""Hide secrets in configuration values before they enter the app model.

Spark redacts a property when ``spark.redaction.regex`` (default :data:`SPARK_DEFAULT_REDACTION_REGEX`) finds a
match in its key or in its value, and shows :data:`REDACTED` instead. We do the same, and go further because
logs written with a weaker or custom regex still reach us: extra patterns given by our operator (matched
against keys), ``-Dkey=value`` pairs inside ``spark.*.extraJavaOptions``, and passwords in ``user:password@``
URLs anywhere in a value.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import Final

SPARK_DEFAULT_REDACTION_REGEX: Final = r"(?i)secret|password|token|access[.]key"
REDACTED: Final = "*********(redacted)"  # Spark's own replacement text (Utils.REDACTION_REPLACEMENT_TEXT)
APP_REDACTION_PROPERTY: Final = "spark.redaction.regex"

# user:password@host in any URL-ish value; the user part is kept so people can still see who connected.
_URL_PASSWORD: Final = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^:/@\s]*):(?P<password>[^@/\s]+)@")
# -Dkey=value inside JVM option strings; values may be quoted.
_JAVA_OPTION: Final = re.compile(r"""(?P<prefix>-D)(?P<key>[^=\s]+)=(?P<value>"[^"]*"|'[^']*'|\S*)""")


def _compile(pattern: str, origin: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"invalid redaction pattern {pattern!r} ({origin}): {exc}") from exc


class Redactor:
    """Decides, for one (key, value) property, whether to show the value or :data:`REDACTED`.

    ``key_and_value`` patterns (Spark's default and the app's own ``spark.redaction.regex``) redact when they
    match the key or the value, as Spark does; ``extra_patterns`` from our configuration match keys only.
    """

    __slots__ = ("_key_and_value", "_key_only")

    def __init__(self, extra_patterns: Sequence[str] = (), *, key_and_value: Sequence[str] = ()) -> None:
        self._key_only: tuple[re.Pattern[str], ...] = tuple(
            _compile(p, "extra redaction pattern") for p in extra_patterns
        )
        self._key_and_value: tuple[re.Pattern[str], ...] = (
            _compile(SPARK_DEFAULT_REDACTION_REGEX, "Spark default"),
            *(_compile(p, APP_REDACTION_PROPERTY) for p in key_and_value),
        )

    def with_app_regex(self, app_regex: str) -> Redactor:
        """This redactor plus the app's own ``spark.redaction.regex``; raises ValueError if it is invalid."""
        clone = Redactor.__new__(Redactor)
        clone._key_only = self._key_only
        clone._key_and_value = (*self._key_and_value, _compile(app_regex, APP_REDACTION_PROPERTY))
        return clone

    def is_secret_key(self, key: str) -> bool:
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


def _matches(patterns: tuple[re.Pattern[str], ...], text: str) -> bool:
    """Whether any pattern matches ``text``; short texts are cached: every app of a cluster repeats its keys."""
    if len(text) > _CACHED_TEXT_MAX:
        return any(p.search(text) for p in patterns)
    return _matches_cached(patterns, text)


_CACHED_TEXT_MAX: Final = 200  # keys and most values; long ones (classpaths) are searched each time


@functools.lru_cache(maxsize=1 << 15)
def _matches_cached(patterns: tuple[re.Pattern[str], ...], text: str) -> bool:
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
