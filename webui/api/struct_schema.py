"""The OpenAPI schema of typed stored results, generated from their msgspec Structs (``analyzer/<analysis>/schema.py``).

``StructField(SomeStruct)`` (or ``StructField(list[SomeStruct])``) is a JSONField whose schema is the type's: the
extension below registers the Struct and every Struct it nests as components (``#/components/schemas/<class
name>``, from ``msgspec.json.schema_components``) and answers a ``$ref``. So the schema shows every stored field
with its type, description and default, and cannot drift from what is stored; a Struct named like a serializer
component makes drf-spectacular warn, which fails the schema test (``--fail-on-warn``).

msgspec writes JSON Schema 2020-12 and drf-spectacular serves OpenAPI 3.0.3: :func:`openapi30` rewrites the two
constructs 3.0 lacks (``{"type": "null"}`` in an ``anyOf`` becomes ``nullable``; a fixed-length tuple's
``prefixItems`` an ``items`` schema), drops an empty ``required`` list, which 3.0 forbids, and puts a ``$ref``
with siblings (a default) in an ``allOf``, as 3.0 ignores them otherwise. The extension is registered when this
module is imported (the endpoints using the field import it).

A union of several Structs (``A | B``), which msgspec neither converts nor documents without a tag in the JSON,
is documented as ``oneOf`` their components: a stored value that is one of several shapes, told apart by the
row's other columns (an app's metrics by its ``app_type``). The Structs must exclude each other (each requires a
field the others lack, or forbids unknown fields), as ``oneOf`` says exactly one matches.
"""

from __future__ import annotations

import functools
import inspect
import types
from typing import Any, get_args

import msgspec
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import ResolvedComponent
from rest_framework import serializers

REF_TEMPLATE = "#/components/schemas/{name}"
_NULL = {"type": "null"}


class StructField(serializers.JSONField):
    """A stored result (or a list of them) passed through as JSON, documented by its msgspec type."""

    def __init__(self, struct: Any, **kwargs: Any) -> None:
        self.struct = struct
        super().__init__(**kwargs)


def openapi30(schema: Any) -> Any:
    """A JSON Schema from msgspec as an OpenAPI 3.0 schema object (recursively)."""
    if isinstance(schema, list):
        return [openapi30(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: openapi30(value) for key, value in schema.items()}
    members = out.get("anyOf")
    if isinstance(members, list) and _NULL in members:
        rest = [m for m in members if m != _NULL]
        del out["anyOf"]
        if len(rest) == 1 and "$ref" in rest[0]:
            out["allOf"] = rest
        elif len(rest) == 1:
            out = {**rest[0], **out}
        else:
            out["anyOf"] = rest
        out["nullable"] = True
    if out.get("required") == []:  # a Struct whose fields all have defaults: 3.0 wants a non-empty list or none
        del out["required"]
    if "prefixItems" in out:
        items = out.pop("prefixItems")
        out["items"] = items[0] if all(item == items[0] for item in items) else {}
    if isinstance(out.get("description"), str):  # a Struct's docstring, as written
        out["description"] = inspect.cleandoc(out["description"])
    if "$ref" in out and len(out) > 1:  # 3.0 ignores a $ref's siblings (a default, a description)
        out = {"allOf": [{"$ref": out.pop("$ref")}], **out}
    return out


def _structs(info: Any, found: dict[str, type]) -> None:
    """Every Struct class under ``info`` (msgspec.inspect type info), by class name."""
    if isinstance(info, msgspec.inspect.StructType):
        if info.cls.__name__ in found:
            return
        found[info.cls.__name__] = info.cls
        for field in info.fields:
            _structs(field.type, found)
    elif isinstance(info, msgspec.inspect.Metadata):  # an Annotated field (a description) around its type
        _structs(info.type, found)
    elif isinstance(info, msgspec.inspect.UnionType):
        for member in info.types:
            _structs(member, found)
    elif isinstance(info, msgspec.inspect.TupleType):
        for item in info.item_types:
            _structs(item, found)
    elif isinstance(info, msgspec.inspect.ListType | msgspec.inspect.VarTupleType):
        _structs(info.item_type, found)
    elif isinstance(info, msgspec.inspect.DictType):
        _structs(info.value_type, found)


def _struct_union(struct: Any) -> tuple[type[msgspec.Struct], ...] | None:
    """The members of a union of several Structs (``A | B``), None for any other type."""
    members = get_args(struct) if isinstance(struct, types.UnionType) else ()
    if len(members) > 1 and all(isinstance(m, type) and issubclass(m, msgspec.Struct) for m in members):
        return members
    return None


@functools.cache
def schema_of(struct: Any) -> tuple[dict[str, Any], dict[str, tuple[type, dict[str, Any]]]]:
    """(the type's schema, {component name: (its Struct, its schema)}) as OpenAPI 3.0."""
    members = _struct_union(struct)
    documented = members or (struct,)
    tops, components = msgspec.json.schema_components(documented, ref_template=REF_TEMPLATE)
    classes: dict[str, type] = {}
    for member in documented:
        _structs(msgspec.inspect.type_info(member), classes)
    top = {"oneOf": list(tops)} if members else tops[0]
    return openapi30(top), {name: (classes[name], openapi30(schema)) for name, schema in components.items()}


class StructFieldExtension(OpenApiSerializerFieldExtension):
    target_class = StructField
    match_subclasses = True  # a field that also decodes what it serves (webui.api.serializers.StoredJSONField)

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        top, components = schema_of(self.target.struct)
        for name, (cls, schema) in components.items():
            component = ResolvedComponent(name=name, type=ResolvedComponent.SCHEMA, schema=schema, object=cls)
            auto_schema.registry.register_on_missing(component)
        return dict(top)
