"""Typed stored results: how the analyses' JSON columns are checked when written and decoded when read.

Each analysis describes what it stores with msgspec Structs in ``analyzer/<analysis>/schema.py`` (one rule for all
of them: the schema lives beside the storage that writes it, because what is stored is the library's result *plus*
what the service adds, such as a localization's stage names or a snapshot's app count); the per-app report's
fixed-shape JSON (an app's metrics, parse statistics and warnings, a finding's observed values, an executor's peak
metrics, a stage's histogram and task times per host) is described in ``analyzer/schema.py``, beside
``analyzer/services.py``, by the same rule. This module is the one way those schemas
are used:

* **On write**, :func:`validated` converts the library's plain data through the schema strictly (no string for a
  number, no ``true`` for a count) and refuses a key the schema does not name, then hands the data back
  unchanged: the stored JSON stays exactly what the library produced, and a library change that breaks or widens
  the shape fails in the tests that store results, not later in a page.
* **On read**, :func:`decode` converts a stored value into its Struct. A key missing from an older row takes the
  field's default (each schema says which fields have one and why); a value that does not decode at all is
  logged and raised as :class:`UnreadableResult`, which the pages and the API turn into "the stored result cannot
  be read: compute it again" rather than a 500 or a page of zeros.

Unknown keys are ignored on read (a row written by a newer version still reads), refused only on write.
``appmodel.coerce`` stays the reader of genuinely untrusted JSON (cluster REST answers); stored results are ours.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, TypeVar

import msgspec

log = logging.getLogger(__name__)

T = TypeVar("T")
S = TypeVar("S")


class ResultShapeError(ValueError):
    """A result about to be stored does not have the shape its schema describes (a library or service change)."""


class UnreadableResult(Exception):
    """A stored result that does not decode as its schema: corrupt, or written in a shape this version cannot read.

    ``str()`` is a clause ("the stored executor anomaly report cannot be read (...)"), :meth:`sentence` a sentence
    with how to compute the result again, which each page and API answer says in its own words.
    """

    def __init__(self, what: str, detail: str) -> None:
        self.what = what
        self.detail = detail
        super().__init__(f"the stored {what} cannot be read ({detail})")

    def sentence(self, advice: str) -> str:
        """The error as a sentence, then ``advice`` (how to compute the result again)."""
        return f"The stored {self.what} cannot be read ({self.detail}). {advice}"


def validated(data: T, schema: Any) -> T:
    """``data`` itself, once it converts strictly to ``schema`` and holds no key the schema does not name
    (:func:`typed`): what a service stores, unchanged."""
    typed(data, schema)
    return data


def typed(data: Any, schema: type[S]) -> S:
    """``data`` converted strictly to ``schema``, refusing a key the schema does not name.

    Raises :class:`ResultShapeError` with the path of the first problem. ``schema`` is a Struct or any type
    msgspec converts to (``list[Row]``, ``dict[str, Run]``).
    """
    try:
        value = msgspec.convert(data, schema)
    except msgspec.ValidationError as error:
        raise ResultShapeError(f"{_name(schema)}: {error}") from error
    unknown = _unknown_keys(value, data, "$")
    if unknown:
        raise ResultShapeError(f"{_name(schema)}: {', '.join(unknown[:5])} not in the schema")
    return value


def decode(data: Any, schema: type[T], *, what: str, row: object = None) -> T:
    """The stored ``data`` as ``schema`` (missing keys take their defaults); :class:`UnreadableResult` when it
    does not decode, logged with the row it came from."""
    try:
        return msgspec.convert(data, schema)
    except msgspec.ValidationError as error:
        detail = str(error)[:300]
        log.error("the stored %s of %r cannot be read: %s", what, row, detail)
        raise UnreadableResult(what, detail) from error


def _name(schema: Any) -> str:
    return schema.__name__ if isinstance(schema, type) else repr(schema)  # list[Row] as such, not "list"


_CONTAINERS = (msgspec.Struct, list, tuple, dict)


@functools.cache
def _layout(cls: type[msgspec.Struct]) -> tuple[frozenset[str], tuple[tuple[str, str], ...]]:
    """(every field's JSON name, (JSON name, attribute) of the fields that can hold keys below them) of a Struct:
    computed once per class, as a big snapshot checks thousands of records of one class."""
    info = msgspec.inspect.type_info(cls)
    if not isinstance(info, msgspec.inspect.StructType):
        raise TypeError(f"{cls!r} is not a Struct")

    def nests(field_type: msgspec.inspect.Type) -> bool:
        # Only a Struct ignores keys it has no field for (a dict keeps them all): a field whose type holds no Struct
        # anywhere below (a list of numbers, a dict of counts) is not walked, so a big list of small rows checks
        # at the speed of the conversion.
        if isinstance(field_type, msgspec.inspect.StructType):
            return True
        if isinstance(field_type, msgspec.inspect.Metadata):  # Annotated[..., msgspec.Meta(...)]
            return nests(field_type.type)
        if isinstance(field_type, msgspec.inspect.UnionType):
            return any(nests(member) for member in field_type.types)
        if isinstance(field_type, msgspec.inspect.TupleType):
            return any(nests(item) for item in field_type.item_types)
        if isinstance(field_type, msgspec.inspect.ListType | msgspec.inspect.VarTupleType):
            return nests(field_type.item_type)
        if isinstance(field_type, msgspec.inspect.DictType):
            return nests(field_type.value_type)
        return False

    names = frozenset(f.encode_name for f in info.fields)
    return names, tuple((f.encode_name, f.name) for f in info.fields if nests(f.type))


def _unknown_keys(value: Any, data: Any, path: str) -> list[str]:
    """Paths of the keys of ``data`` that its decoded ``value`` has no field for (convert ignores them)."""
    if isinstance(value, msgspec.Struct):
        names, nested = _layout(type(value))
        found = [f"{path}.{key}" for key in sorted(data.keys() - names)]
        for key, name in nested:
            if key in data:
                found += _unknown_keys(getattr(value, name), data[key], f"{path}.{key}")
        return found
    found = []
    if isinstance(value, list | tuple):
        for i, (inner, raw) in enumerate(zip(value, data, strict=True)):
            if not isinstance(inner, _CONTAINERS):
                break  # a list of numbers or strings: nothing below holds keys
            found += _unknown_keys(inner, raw, f"{path}[{i}]")
    elif isinstance(value, dict):
        for key, inner in value.items():
            if isinstance(inner, _CONTAINERS):
                found += _unknown_keys(inner, data[key], f"{path}[{key!r}]")
    return found
