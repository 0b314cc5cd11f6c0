"""JSON Schemas from Python type hints, for ``airlock_tool``: what a tool's
parameters and results advertise (see ``airlock_tool``'s type table), and
how checked JSON arguments become the annotated Python values again.

``arg`` (``Annotated[T, arg(...)]``) describes one parameter. Nothing here
needs the component's bindings: the schemas are unit-tested with plain
CPython. ``airlock_tool`` re-exports these names.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import types as _pytypes
import typing
from typing import Any, Dict, List, Optional

__all__ = ["arg", "schema_of", "decode", "SchemaError", "UNSET"]


class SchemaError(TypeError):
    """A parameter or result type that has no JSON Schema (raised at import)."""


class _Unset:
    """The value of an ``arg`` field not given (``None`` is a value there)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@dataclasses.dataclass(frozen=True)
class arg:  # noqa: N801 - used like an attribute: Annotated[int, arg(...)]
    """Per-parameter metadata for ``Annotated[T, arg(...)]``.

    ``description`` documents the parameter; ``rename`` publishes it under
    another name; ``minimum``/``maximum`` bound numbers; ``example`` is a
    value to show, advertised as ``examples: [value]`` (OpenRPC examples
    and testers call the tool with it; it fills nothing in and makes
    nothing optional; ``None`` is an example too); ``header`` mirrors the
    argument into the HTTP header ``Mcp-Param-<header>`` (``x-mcp-header``,
    MCP 2026-07-28: a str, int or bool parameter); ``schema`` merges extra
    JSON Schema keywords.
    """

    description: Optional[str] = None
    rename: Optional[str] = None
    minimum: Optional[float] = None
    maximum: Optional[float] = None
    example: Any = UNSET
    header: Optional[str] = None
    schema: Optional[Dict[str, Any]] = None


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__total__")


def _strip_optional(tp: Any):
    """(inner type, True) for Optional[T] / T | None, else (tp, False)."""
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is getattr(_pytypes, "UnionType", None):
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(members) != len(typing.get_args(tp)):
            if len(members) == 1:
                return members[0], True
            return typing.Union[tuple(members)], True
    return tp, False


def _split_annotated(tp: Any):
    """(type, [metadata]) for Annotated[T, ...], else (tp, [])."""
    if typing.get_origin(tp) is typing.Annotated:
        base, *meta = typing.get_args(tp)
        return base, meta
    return tp, []


def _meta_schema(meta: list, where: str = "value") -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for m in meta:
        if isinstance(m, str):
            out["description"] = m
        elif isinstance(m, arg):
            if m.description is not None:
                out["description"] = m.description
            if m.minimum is not None:
                out["minimum"] = m.minimum
            if m.maximum is not None:
                out["maximum"] = m.maximum
            if m.example is not UNSET:
                example = _jsonable(m.example)
                try:
                    json.dumps(example, allow_nan=False)
                except (TypeError, ValueError) as e:
                    raise SchemaError(f"the example of {where} is not JSON: {e}") from None
                out["examples"] = [example]
            if m.header is not None:
                token = "!#$%&'*+-.^_`|~"
                if not m.header or not all(c.isascii() and (c.isalnum() or c in token) for c in m.header):
                    raise SchemaError(
                        f"the header of {where} is not an HTTP header name: {m.header!r} "
                        f"(letters, digits and {token}, without Mcp-Param-)"
                    )
                out["x-mcp-header"] = m.header
            if m.schema:
                out.update(m.schema)
    return out


def _enum_schema(values: list) -> Dict[str, Any]:
    schema: Dict[str, Any] = {}
    if values and all(isinstance(v, str) for v in values):
        schema["type"] = "string"
    elif values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        schema["type"] = "integer"
    schema["enum"] = list(values)
    return schema


def schema_of(tp: Any, where: str = "value") -> Dict[str, Any]:
    """The JSON Schema of a type annotation (see the module's type table).

    ``where`` names the parameter in the error for an unsupported type.
    """
    tp, meta = _split_annotated(tp)
    inner, optional = _strip_optional(tp)
    if optional:
        schema = schema_of(inner, where)
    else:
        schema = _plain_schema(tp, where)
    schema.update(_meta_schema(meta, where))
    return schema


def _plain_schema(tp: Any, where: str) -> Dict[str, Any]:
    if tp is Any or tp is dict or typing.get_origin(tp) is dict:
        return {}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    if tp is datetime.datetime:
        return {"type": "string", "format": "date-time"}
    origin = typing.get_origin(tp)
    if origin in (list, List):
        args = typing.get_args(tp)
        return {"type": "array", "items": schema_of(args[0], where) if args else {}}
    if tp is list:
        return {"type": "array"}
    if origin is typing.Literal:
        return _enum_schema(list(typing.get_args(tp)))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum_schema([m.value for m in tp])
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = typing.get_type_hints(tp, include_extras=True)
        props: Dict[str, Any] = {}
        required: List[str] = []
        for field in dataclasses.fields(tp):
            ftype = hints[field.name]
            props[field.name] = schema_of(ftype, f"{where}.{field.name}")
            has_default = (
                field.default is not dataclasses.MISSING
                or field.default_factory is not dataclasses.MISSING
            )
            if field.default is not dataclasses.MISSING and field.default is not None:
                props[field.name]["default"] = _jsonable(field.default)
            if not has_default and not _strip_optional(_split_annotated(ftype)[0])[1]:
                required.append(field.name)
        return {"type": "object", "properties": props, "required": required}
    if _is_typeddict(tp):
        hints = typing.get_type_hints(tp, include_extras=True)
        req_keys = getattr(tp, "__required_keys__", frozenset(hints))
        props = {k: schema_of(v, f"{where}.{k}") for k, v in hints.items()}
        required = [k for k in hints if k in req_keys]
        return {"type": "object", "properties": props, "required": required}
    raise SchemaError(
        f"{where} has type {tp!r}, which a tool cannot receive or return as JSON; "
        "use int, float, bool, str, datetime, list[...], Optional[...], Literal, "
        "an Enum, a dataclass, a TypedDict, dict or Any"
    )


def _jsonable(value: Any) -> Any:
    """A Python value as JSON data (enums by value, dataclasses as objects)."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {}
        for field in dataclasses.fields(value):
            v = getattr(value, field.name)
            if v is not None:
                out[field.name] = _jsonable(v)
        return out
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _decodes_as_is(tp: Any) -> bool:
    """True when ``decode(tp, value)`` is ``value`` itself for any checked
    JSON value: ``str``, ``int``, ``bool``, ``Literal``, ``Any``, ``dict``
    and ``Optional`` of those (a tool's decorator asks once, so that a call
    skips ``decode`` for them)."""
    tp, _ = _split_annotated(tp)
    inner, optional = _strip_optional(tp)
    if optional:
        return _decodes_as_is(inner)
    return tp in (str, int, bool, dict, typing.Any) or typing.get_origin(tp) in (
        typing.Literal,
        dict,
    )


def decode(tp: Any, value: Any) -> Any:
    """Turns checked JSON data into the annotated Python type."""
    tp, _ = _split_annotated(tp)
    inner, optional = _strip_optional(tp)
    if value is None:
        return None
    if optional:
        return decode(inner, value)
    if tp is float and isinstance(value, int):
        return float(value)
    if tp is datetime.datetime and isinstance(value, str):
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    origin = typing.get_origin(tp)
    if origin in (list, List):
        args = typing.get_args(tp)
        return [decode(args[0], v) for v in value] if args else list(value)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp(value)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = typing.get_type_hints(tp, include_extras=True)
        kwargs = {
            f.name: decode(hints[f.name], value[f.name])
            for f in dataclasses.fields(tp)
            if f.name in value
        }
        return tp(**kwargs)
    if _is_typeddict(tp):
        hints = typing.get_type_hints(tp, include_extras=True)
        return {k: decode(hints[k], v) if k in hints else v for k, v in value.items()}
    return value
