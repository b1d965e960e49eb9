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

Budgets (:class:`ConfBudget`, docs/SOURCES.md "Resource budgets"): Hadoop caps only the depth, so twenty references
to one large property make a value twenty times its size, and every property may do it: a 2 MB file expanded to
gigabytes. Here a value whose expansion would grow past ``max_value_chars`` is kept unexpanded, and once the
characters built by expansion in the whole file pass ``max_total_chars`` every remaining reference is kept
unexpanded; each is reported in one warning. The length of a step is checked before its string is built, so
neither budget is ever exceeded in memory. A file larger than ``max_file_bytes`` is not read.

Secrets: :class:`~appmodel.redaction.Redactor`'s rules (which include Hadoop's own default
``hadoop.security.sensitive-config-keys`` patterns), plus those the file itself sets, compiled with RE2. A value
that took part of its text from a secret property through ``${...}`` is redacted too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final
from xml.parsers import expat

from appmodel.redaction import REDACTED, SENSITIVE_KEYS_PROPERTY, Redactor, sensitive_key_patterns
from fetchers.eventlog.layout import NotRegularFile, open_regular

MAX_SUBSTITUTIONS: Final = 20  # Hadoop's Configuration.MAX_SUBST
_CHUNK: Final = 1 << 16
_VAR: Final = re.compile(r"\$\{([^}$\s]+)\}")
_MAX_LISTED: Final = 5


@dataclass(frozen=True, slots=True)
class ConfBudget:
    """What reading one configuration may cost; the defaults, unless the analyzer's settings replace them
    (:func:`set_default_budget`)."""

    max_file_bytes: int = 16 << 20  # real job confs are tens of KB, the largest a few MB
    max_value_chars: int = 1 << 20  # an expanded value (classpaths, the longest real ones, are KBs)
    max_total_chars: int = 16 << 20  # characters built by expansion across one file


_default_budget = ConfBudget()


def default_budget() -> ConfBudget:
    return _default_budget


def set_default_budget(budget: ConfBudget) -> None:
    """Replace the budget every later read uses by default (the analyzer applies its settings once at start-up)."""
    global _default_budget
    _default_budget = budget


class ConfError(Exception):
    """The file is not a readable Hadoop configuration (one line)."""


@dataclass(slots=True)
class HadoopConf:
    properties: dict[str, str] = field(default_factory=dict)  # resolved and redacted
    warnings: list[str] = field(default_factory=list)
    unresolved: dict[str, str] = field(default_factory=dict)  # key -> first unresolvable ${var} it kept


def read_conf_xml(
    path: Path, redaction_patterns: Sequence[str] = (), *, budget: ConfBudget | None = None
) -> HadoopConf:
    """Parse, resolve and redact one configuration file; ConfError when it cannot be read or parsed at all."""
    budget = budget or _default_budget
    try:
        # Opened without blocking and checked on the descriptor: a FIFO in the file's place is refused, not waited on.
        with open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > budget.max_file_bytes:
                raise ConfError(
                    f"{path.name}: {size} bytes, larger than the limit of {budget.max_file_bytes}; not read"
                )
            raw = parse_conf_xml(fh, name=path.name, max_bytes=budget.max_file_bytes)
    except NotRegularFile:
        raise ConfError(f"{path.name}: not a regular file; not read") from None
    except OSError as exc:
        raise ConfError(f"{path.name}: cannot read ({exc.strerror or exc})") from exc
    return resolve_and_redact(raw, redaction_patterns, name=path.name, budget=budget)


def read_conf_stream(
    stream: IO[bytes], redaction_patterns: Sequence[str] = (), *, name: str, budget: ConfBudget | None = None
) -> HadoopConf:
    """As :func:`read_conf_xml`, from a binary stream (a WebHDFS or REST response body); ConfError if unreadable."""
    budget = budget or _default_budget
    try:
        raw = parse_conf_xml(stream, name=name, max_bytes=budget.max_file_bytes)
    except OSError as exc:
        raise ConfError(f"{name}: read failed ({exc.strerror or exc})") from exc
    return resolve_and_redact(raw, redaction_patterns, name=name, budget=budget)


def parse_conf_xml(
    stream: IO[bytes], *, name: str = "configuration", max_bytes: int | None = None
) -> list[tuple[str, str]]:
    """(name, raw value) pairs in file order. ConfError on malformed XML, a DTD, no <configuration> root, or more
    than ``max_bytes`` (default: the default budget's ``max_file_bytes``)."""
    limit = _default_budget.max_file_bytes if max_bytes is None else max_bytes
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
            if read > limit:
                raise ConfError(f"{name}: larger than the limit of {limit} bytes; not read")
            parser.Parse(chunk, False)
        parser.Parse(b"", True)
    except expat.ExpatError as exc:
        raise ConfError(f"{name}: not well-formed XML ({expat.ErrorString(exc.code)}, line {exc.lineno})") from exc
    return pairs


def resolve_and_redact(
    pairs: Iterable[tuple[str, str]],
    redaction_patterns: Sequence[str] = (),
    *,
    name: str = "configuration",
    budget: ConfBudget | None = None,
) -> HadoopConf:
    """Expand ``${var}`` references like Hadoop within ``budget``, then redact secrets (see the module docstring).
    ValueError when one of ``redaction_patterns`` is not a valid regex."""
    budget = budget or _default_budget
    raw: dict[str, str] = {}
    for key, value in pairs:
        raw[key] = value
    conf = HadoopConf()
    usable, problems = sensitive_key_patterns(raw.get(SENSITIVE_KEYS_PROPERTY, ""), SENSITIVE_KEYS_PROPERTY)
    conf.warnings.extend(f"{name}: {problem}" for problem in problems)
    redactor = Redactor(redaction_patterns, untrusted_key_patterns=usable)
    kept: dict[str, list[str]] = {"depth": [], "size": [], "budget": []}
    meter = ExpansionMeter(budget.max_total_chars)
    for key, value in raw.items():
        resolved, used, problem = substitute(value, raw, max_value_chars=budget.max_value_chars, meter=meter)
        if problem in kept:
            kept[problem].append(key)
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
    reasons = {
        "depth": f"variable substitution deeper than {MAX_SUBSTITUTIONS} levels",
        "size": f"variable substitution would make a value longer than {budget.max_value_chars} characters",
        "budget": f"variable substitution past the file's budget of {budget.max_total_chars} characters",
    }
    for problem, keys in kept.items():
        if keys:
            more = len(keys) - _MAX_LISTED
            conf.warnings.append(
                f"{name}: {reasons[problem]}, kept verbatim: {', '.join(keys[:_MAX_LISTED])}"
                f"{f' and {more} more' if more > 0 else ''}"
            )
    return conf


@dataclass(slots=True)
class ExpansionMeter:
    """Characters expansion may still build in one file (every step's new string counts: work and memory)."""

    left: int


def substitute(
    value: str,
    properties: dict[str, str],
    *,
    max_value_chars: int | None = None,
    meter: ExpansionMeter | None = None,
) -> tuple[str, list[str], str | None]:
    """(expanded value, variables used, problem) for one raw value, following ``Configuration.substituteVars``.

    ``problem`` is None, the first unbound reference (``${x}``, kept in the value with what was expanded
    before it), ``"${x}"`` for a self-reference (the raw value is returned), ``"depth"``, ``"size"`` (a step would
    make the value longer than ``max_value_chars``) or ``"budget"`` (longer than what ``meter`` has left); for
    the last three the raw value is returned. Lengths are checked before a step's string is built.
    """
    if "${" not in value:
        return value, [], None
    limit = _default_budget.max_value_chars if max_value_chars is None else max_value_chars
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
        # Budgets first: the loop test below scans the replacement, which must be paid for too.
        length = len(current) - len(match.group(0)) + len(replacement)
        if length > limit:
            return value, used, "size"
        if meter is not None:
            if length > meter.left:
                return value, used, "budget"
            meter.left -= length
        if match.group(0) in replacement:  # a loop: Hadoop gives the original expression back
            return value, used, match.group(0)
        current = current[: match.start()] + replacement + current[match.end() :]
    if _VAR.search(current) is None:
        return current, used, None
    return value, used, "depth"
