"""Builds frozen dataclasses from parsed YAML, checking keys, types and ranges.

Validation happens once, here, at the edge: unknown keys are rejected by name,
missing keys are reported by their dotted path, and a field's ``metadata`` may
carry ``min``/``max`` bounds and ``choices``, and ``unbounded`` where infinity
is a meaningful value (NaN never is). Code downstream trusts the objects.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Any, Union

from .errors import UserError


class SchemaError(UserError):
    pass


def _describe(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _is_optional(tp: Any) -> bool:
    origin = typing.get_origin(tp)
    return origin in (Union, types.UnionType) and type(None) in typing.get_args(tp)


def _convert(tp: Any, value: Any, where: str, source: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None and len(args) < len(typing.get_args(tp)):
            return None
        errors = []
        for arg in args:
            try:
                return _convert(arg, value, where, source)
            except SchemaError as exc:
                errors.append(str(exc))
        raise SchemaError(errors[0] if len(errors) == 1 else
                          f"{source}: {where}: expected one of {', '.join(_describe(a) for a in args)}, got {value!r}")
    if dataclasses.is_dataclass(tp):
        return build(tp, value, where, source)
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise SchemaError(f"{source}: {where}: expected a list, got {value!r}")
        (item,) = typing.get_args(tp)[:1]
        return tuple(_convert(item, v, f"{where}[{i}]", source) for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise SchemaError(f"{source}: {where}: expected a mapping, got {value!r}")
        key_tp, val_tp = typing.get_args(tp)
        return {
            _convert(key_tp, k, f"{where} key {k!r}", source): _convert(val_tp, v, f"{where}.{k}", source)
            for k, v in value.items()
        }
    if tp is Any:
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise SchemaError(f"{source}: {where}: expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SchemaError(f"{source}: {where}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, str) and value.strip().lower() in ("inf", ".inf", "infinity"):
            return math.inf
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SchemaError(f"{source}: {where}: expected a number, got {value!r}")
        if math.isnan(value):
            raise SchemaError(f"{source}: {where}: is NaN (.nan), which is no figure; give a number")
        return float(value)
    if tp is str:
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise SchemaError(f"{source}: {where}: expected a string, got {value!r}")
        return str(value)
    raise TypeError(f"unsupported field type {tp!r} at {where}")


def _check_bounds(field: dataclasses.Field, value: Any, where: str, source: str) -> None:
    meta = field.metadata
    values = value if isinstance(value, tuple) else value.values() if isinstance(value, dict) else [value]
    for v in values:
        if v is None or not isinstance(v, (int, float, str)):
            continue
        if "choices" in meta and v not in meta["choices"]:
            raise SchemaError(f"{source}: {where}: {v!r} is not one of {', '.join(map(str, meta['choices']))}")
        if "min" in meta and isinstance(v, (int, float)) and v < meta["min"]:
            raise SchemaError(f"{source}: {where}: {v} is below the minimum {meta['min']}")
        if "max" in meta and isinstance(v, (int, float)) and v > meta["max"]:
            raise SchemaError(f"{source}: {where}: {v} is above the maximum {meta['max']}")
        # Infinity means "unbounded" and is only meaningful where a field says so (a request rate).
        if isinstance(v, float) and math.isinf(v) and not meta.get("unbounded"):
            raise SchemaError(f"{source}: {where}: {v} is infinite; give a finite number")


def build(cls: type, data: Any, where: str, source: str):
    """Make ``cls`` from ``data`` (a mapping), naming ``source`` and the key path in errors."""
    label = where or "top level"
    if not isinstance(data, dict):
        raise SchemaError(f"{source}: {label}: expected a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(map(str, data)) - set(fields))
    if unknown:
        prefix = f"{where}." if where else ""
        raise SchemaError(
            f"{source}: unknown key {prefix}{unknown[0]!s}; allowed here: {', '.join(sorted(fields))}"
        )
    kwargs = {}
    for name, field in fields.items():
        path = f"{where}.{name}" if where else name
        if name not in data:
            has_default = field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING
            if has_default:
                continue
            if _is_optional(hints[name]):
                kwargs[name] = None
                continue
            raise SchemaError(f"{source}: missing key {path}; add it (see the shipped scenarios for an example)")
        value = _convert(hints[name], data[name], path, source)
        _check_bounds(field, value, path, source)
        kwargs[name] = value
    obj = cls(**kwargs)
    validate = getattr(obj, "validate", None)
    if validate:
        validate(source)
    return obj


def to_plain(obj: Any) -> Any:
    """Inverse of ``build``: dataclasses to plain YAML/JSON-able values."""
    if dataclasses.is_dataclass(obj):
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_plain(v) for k, v in obj.items()}
    if isinstance(obj, float) and math.isinf(obj):
        return "inf"
    return obj
