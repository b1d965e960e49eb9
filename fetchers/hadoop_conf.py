"""Hadoop Configuration XML (a job's ``_conf.xml``, ``job.xml``, ``*-site.xml``) -> a resolved, redacted dict.

Parsing: ``<configuration><property><name>k</name><value>v</value>...</property>...</configuration>``, also the
attribute form ``<property name="k" value="v"/>``; ``<source>``, ``<final>``, ``<description>`` are ignored. The
file is fed to expat in chunks (never read whole) and any DTD is refused, so entity tricks cannot blow it up.
A later property of the same name replaces an earlier one, as in Hadoop.

Variables: ``${name}`` is expanded as Hadoop's ``Configuration.substituteVars`` does: the leftmost reference first,
at most :data:`MAX_SUBSTITUTIONS` rounds, from the other properties (the system properties of the JVM that read
the file, such as ``user.name``, and ``${env.X}`` variables are not known here); an unbound reference, a
self-reference or too deep a chain leaves the raw value as Hadoop would (unbound: what is expanded so far), and
is reported in one warning.

Secrets: :class:`~appmodel.redaction.Redactor`'s rules (which include Hadoop's own default
``hadoop.security.sensitive-config-keys`` patterns), plus those the file itself sets, compiled with RE2. A value
that took part of its text from a secret property through ``${...}`` is redacted too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final
from xml.parsers import expat

from appmodel.redaction import REDACTED, Redactor, Searcher, compile_untrusted

MAX_SUBSTITUTIONS: Final = 20  # Hadoop's Configuration.MAX_SUBST
MAX_CONF_BYTES: Final = 64 << 20  # real job confs are tens of KB; anything this big is not one
_CHUNK: Final = 1 << 16
_VAR: Final = re.compile(r"\$\{([^}$\s]+)\}")
SENSITIVE_KEYS_PROPERTY: Final = "hadoop.security.sensitive-config-keys"
_MAX_LISTED: Final = 5


class ConfError(Exception):
    """The file is not a readable Hadoop configuration (one line)."""


@dataclass(slots=True)
class HadoopConf:
    properties: dict[str, str] = field(default_factory=dict)  # resolved and redacted
    warnings: list[str] = field(default_factory=list)
    unresolved: dict[str, str] = field(default_factory=dict)  # key -> first unresolvable ${var} it kept


def read_conf_xml(path: Path, redaction_patterns: Sequence[str] = ()) -> HadoopConf:
    """Parse, resolve and redact one configuration file; ConfError when it cannot be read or parsed at all."""
    try:
        size = path.stat().st_size
        if size > MAX_CONF_BYTES:
            raise ConfError(f"{path.name}: {size} bytes, larger than {MAX_CONF_BYTES >> 20} MiB; not read")
        with path.open("rb") as fh:
            raw = parse_conf_xml(fh, name=path.name)
    except OSError as exc:
        raise ConfError(f"{path.name}: cannot read ({exc.strerror or exc})") from exc
    return resolve_and_redact(raw, redaction_patterns, name=path.name)


def read_conf_stream(stream: IO[bytes], redaction_patterns: Sequence[str] = (), *, name: str) -> HadoopConf:
    """As :func:`read_conf_xml`, from a binary stream (a WebHDFS or REST response body); ConfError if unreadable."""
    try:
        raw = parse_conf_xml(stream, name=name)
    except OSError as exc:
        raise ConfError(f"{name}: read failed ({exc.strerror or exc})") from exc
    return resolve_and_redact(raw, redaction_patterns, name=name)


def parse_conf_xml(stream: IO[bytes], *, name: str = "configuration") -> list[tuple[str, str]]:
    """(name, raw value) pairs in file order. ConfError on malformed XML, a DTD, or no <configuration> root."""
    pairs: list[tuple[str, str]] = []
    stack: list[str] = []
    current: dict[str, str] | None = None
    text: list[str] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        nonlocal current
        if not stack and tag != "configuration":
            raise ConfError(f"{name}: root element is <{tag}>, not <configuration>")
        stack.append(tag)
        if tag == "property" and len(stack) == 2:
            current = {k: v for k, v in attrs.items() if k in ("name", "value")}
        text.clear()

    def end(tag: str) -> None:
        nonlocal current
        if current is not None and tag in ("name", "value") and len(stack) == 3:
            current[tag] = "".join(text)
        elif tag == "property" and current is not None and len(stack) == 2:
            if current.get("name"):
                # Hadoop trims names and keeps values verbatim (values may legitimately hold spaces).
                pairs.append((current["name"].strip(), current.get("value", "")))
            current = None
        stack.pop()
        text.clear()

    def chars(data: str) -> None:
        text.append(data)

    def refuse_dtd(*_args: object) -> None:
        raise ConfError(f"{name}: document type declarations are not accepted")

    parser = expat.ParserCreate()
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    parser.StartDoctypeDeclHandler = refuse_dtd
    parser.EntityDeclHandler = refuse_dtd
    read = 0
    try:
        while chunk := stream.read(_CHUNK):
            read += len(chunk)
            if read > MAX_CONF_BYTES:
                raise ConfError(f"{name}: larger than {MAX_CONF_BYTES >> 20} MiB; not read")
            parser.Parse(chunk, False)
        parser.Parse(b"", True)
    except expat.ExpatError as exc:
        raise ConfError(f"{name}: not well-formed XML ({expat.ErrorString(exc.code)}, line {exc.lineno})") from exc
    return pairs


def resolve_and_redact(
    pairs: Iterable[tuple[str, str]], redaction_patterns: Sequence[str] = (), *, name: str = "configuration"
) -> HadoopConf:
    """Expand ``${var}`` references like Hadoop, then redact secrets (see the module docstring). ValueError when
    one of ``redaction_patterns`` is not a valid regex."""
    raw: dict[str, str] = {}
    for key, value in pairs:
        raw[key] = value
    conf = HadoopConf()
    job_patterns = [p.strip() for p in raw.get(SENSITIVE_KEYS_PROPERTY, "").split(",") if p.strip()]
    usable: list[Searcher] = []
    for pattern in job_patterns:
        try:
            usable.append(compile_untrusted(pattern, SENSITIVE_KEYS_PROPERTY))
        except ValueError as exc:  # the built-in patterns still apply
            conf.warnings.append(f"{name}: ignored a pattern: {exc}")
    redactor = Redactor(redaction_patterns, untrusted_key_patterns=usable)
    too_deep: list[str] = []
    for key, value in raw.items():
        resolved, used, problem = substitute(value, raw)
        if problem == "depth":
            too_deep.append(key)
        elif problem:
            conf.unresolved[key] = problem
        if any(redactor.is_secret_key(var) for var in used):
            conf.properties[key] = REDACTED
        else:
            conf.properties[key] = redactor.redact(key, resolved)
    if conf.unresolved:
        listed = ", ".join(f"{k} ({v})" for k, v in list(conf.unresolved.items())[:_MAX_LISTED])
        more = len(conf.unresolved) - _MAX_LISTED
        conf.warnings.append(
            f"{name}: {len(conf.unresolved)} value(s) reference variables not defined in the configuration, kept "
            f"verbatim: {listed}{f' and {more} more' if more > 0 else ''}"
        )
    if too_deep:
        conf.warnings.append(
            f"{name}: variable substitution deeper than {MAX_SUBSTITUTIONS} levels, kept verbatim: "
            + ", ".join(too_deep[:_MAX_LISTED])
        )
    return conf


def substitute(value: str, properties: dict[str, str]) -> tuple[str, list[str], str | None]:
    """(expanded value, variables used, problem) for one raw value, following ``Configuration.substituteVars``.

    ``problem`` is None, the first unbound reference (``${x}``, kept in the value with what was expanded
    before it), ``"${x}"`` for a self-reference (the raw value is returned), or ``"depth"`` (raw value returned).
    """
    if "${" not in value:
        return value, [], None
    current = value
    used: list[str] = []
    for _ in range(MAX_SUBSTITUTIONS):
        match = _VAR.search(current)
        if match is None:
            return current, used, None
        var = match.group(1)
        replacement = properties.get(var)
        if replacement is None:
            return current, used, match.group(0)
        used.append(var)
        if match.group(0) in replacement:  # a loop: Hadoop gives the original expression back
            return value, used, match.group(0)
        current = current[: match.start()] + replacement + current[match.end() :]
    if _VAR.search(current) is None:
        return current, used, None
    return value, used, "depth"
