"""Pydantic models for the files users write, and their errors as one line.

Validation happens once, at the edge: unknown keys are rejected by name,
missing keys and bad values are reported by their dotted path, bounds live on
the field types (so the JSON Schema shows them too). Infinity is accepted only
where a field says it means "unbounded" (a request rate); NaN never is. Rules
that span fields live in a model's ``check(source)`` and raise ``UserError``
themselves; code downstream trusts the objects.
"""

from __future__ import annotations

import math
import reprlib
import types
import typing
from collections.abc import Iterator
from typing import Annotated, Any, Literal, Union, overload

from annotated_types import GroupedMetadata
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from .errors import UserError

# YAML 1.1 reads `.inf` as a float; people also write `inf`, which it reads as a string.
INF_WORDS = ("inf", ".inf", "infinity")


class SchemaError(UserError):
    pass


class Record(BaseModel):
    """A frozen record from a user's file: unknown keys are errors, numbers given for text are text."""

    # Schema titles are the keys as written in the file, not prettified words.
    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True,
                              field_title_generator=lambda name, _info: name)

    def check(self, source: str) -> None:
        """Rules that span fields; raise UserError naming ``source``. None by default."""

    @model_validator(mode="after")
    def _check_named_source(self, info: ValidationInfo):
        # Only a load names its source; a model built in code is checked by whoever builds it.
        if info.context and "source" in info.context:
            self.check(info.context["source"])
        return self


def _finite_or_unbounded(unbounded: bool):
    def check(value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in INF_WORDS:
            value = math.inf
        if isinstance(value, float) and math.isnan(value):
            raise PydanticCustomError("nan", "is NaN (.nan), which is no figure; give a number")
        if isinstance(value, float) and math.isinf(value) and not unbounded:
            raise PydanticCustomError("infinite", "{value} is infinite; give a finite number", {"value": value})
        return value
    return check


class IntBounds(GroupedMetadata):
    """``Annotated[int, IntBounds(ge, le)]``: an integer (never a bool or a float) within [ge, le].

    Metadata rather than a function returning a type, so a type checker reads the field as ``int``."""

    def __init__(self, ge: int | None = None, le: int | None = None) -> None:
        self.ge, self.le = ge, le

    def __iter__(self) -> Iterator[object]:
        yield Field(strict=True, ge=self.ge, le=self.le)


class NumberBounds(GroupedMetadata):
    """``Annotated[float, NumberBounds(ge, le)]``: a finite number (an integer is one too, a bool or a
    numeric string is not) within [ge, le]; with ``unbounded``, infinity (`.inf` or `inf`) is allowed as well."""

    def __init__(self, ge: float | None = None, le: float | None = None, *, unbounded: bool = False) -> None:
        self.ge, self.le, self.unbounded = ge, le, unbounded

    def __iter__(self) -> Iterator[object]:
        # The words and NaN are seen before the strict float check, which carries the bounds (so the schema shows them).
        yield Field(strict=True, ge=self.ge, le=self.le)
        yield BeforeValidator(_finite_or_unbounded(self.unbounded))
        if self.unbounded:
            bound = {"type": "number", **({"minimum": self.ge} if self.ge is not None else {}),
                     **({"maximum": self.le} if self.le is not None else {})}
            yield WithJsonSchema({"anyOf": [bound, {"enum": list(INF_WORDS)}]})


StrictInt = Annotated[int, IntBounds()]
FiniteNumber = Annotated[float, NumberBounds()]
Flag = Annotated[bool, Field(strict=True)]

M = typing.TypeVar("M", bound=BaseModel)


def tagged_union(tag: str, *members: type[BaseModel], title: str, description: str) -> Any:
    """The records ``members`` told apart by their field ``tag`` (each member's a one-value Literal):
    a file of one of them is validated as that one, with its own rules; ``title`` and ``description``
    head its JSON Schema."""
    # Union[...] of a tuple: the members are known only at the call, so no X | Y spelling exists.
    return Annotated[Union[members], Field(discriminator=tag, title=title, description=description)]  # noqa: UP007


@overload
def load(cls: type[M], data: Any, source: str, where: str = "", fix: str | None = None) -> M: ...
@overload
def load(cls: object, data: Any, source: str, where: str = "", fix: str | None = None) -> Any: ...
def load(cls: Any, data: Any, source: str, where: str = "", fix: str | None = None) -> Any:
    """``cls`` (a record, or a ``tagged_union`` of records) from ``data`` (parsed YAML or JSON), or a
    UserError naming ``source`` and the key path; ``fix`` ends every message (a scenario's own default
    says to see the shipped ones)."""
    try:
        if _is_model(cls):
            return cls.model_validate(data, context={"source": source})
        return TypeAdapter(cls).validate_python(data, context={"source": source})
    except ValidationError as exc:
        message = one_line(cls, exc, source, where, fix is None)
        raise SchemaError(message if fix is None else f"{message}; {fix}") from None


def one_line(cls: Any, exc: ValidationError, source: str, where: str = "", hint: bool = True) -> str:
    errors = exc.errors()
    first = errors[0]
    if first["type"] == "extra_forbidden":
        # Several unknown keys under one parent: name the first in sorted order, as the list of allowed ones is.
        same = [e for e in errors if e["type"] == "extra_forbidden" and e["loc"][:-1] == first["loc"][:-1]]
        first = min(same, key=lambda e: str(e["loc"][-1]))
    loc, kind, value = first["loc"], first["type"], first.get("input")
    path, parent, leaf, raw = _walk(cls, loc, where)
    label = path or "top level"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        # The tag is read before its record is chosen: report it as the key it is, as a Literal field would be.
        tag, members = _tagged(raw) or ("?", {})
        key = f"{path}.{tag}" if path else tag
        if kind == "union_tag_not_found":
            return f"{source}: missing key {key}" + ("; add it (see the shipped scenarios for an example)" if hint else "")
        given = value.get(tag) if isinstance(value, dict) else value
        return f"{source}: {key}: {_show(given)} is not one of {', '.join(map(str, members))}"
    if kind == "extra_forbidden":
        allowed = ", ".join(sorted(parent.model_fields)) if _is_model(parent) else "none"
        return f"{source}: unknown key {path}; allowed here: {allowed}"
    if kind == "missing":
        return f"{source}: missing key {path}" + ("; add it (see the shipped scenarios for an example)" if hint else "")
    return f"{source}: {label}: {_what(kind, value, first.get('ctx') or {}, leaf, first['msg'])}"


def _what(kind: str, value: Any, ctx: dict, leaf: Any, msg: str) -> str:
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"expected an integer, got {_show(value)}"
    if kind in ("float_type", "float_parsing"):
        return f"expected a number, got {_show(value)}"
    if kind in ("bool_type", "bool_parsing"):
        return f"expected true or false, got {_show(value)}"
    if kind == "string_type":
        return f"expected a string, got {_show(value)}"
    if kind in ("tuple_type", "list_type"):
        return f"expected a list, got {_show(value)}"
    if kind == "dict_type":
        return f"expected a mapping, got {_show(value)}"
    if kind in ("model_type", "model_attributes_type"):
        return f"expected a mapping, got {type(value).__name__}"
    if kind == "literal_error":
        choices = typing.get_args(leaf) if typing.get_origin(leaf) is Literal else ()
        return f"{_show(value)} is not one of {', '.join(map(str, choices))}" if choices else msg
    if kind in ("greater_than_equal", "greater_than"):
        return f"{_show(value)} is below the minimum {_bound(ctx.get('ge', ctx.get('gt')))}"
    if kind in ("less_than_equal", "less_than"):
        return f"{_show(value)} is above the maximum {_bound(ctx.get('le', ctx.get('lt')))}"
    return msg


# A value in a message is cut short: a long string or a nested list must not make a multi-megabyte line.
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 60


def _show(value: Any) -> str:
    return _REPR.repr(value)


def _bound(x: Any) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _unwrap(tp: Any) -> Any:
    while True:
        origin = typing.get_origin(tp)
        if origin is Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            tp = args[0] if len(args) == 1 else tp
            if len(args) != 1:
                return tp
        else:
            return tp


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _tagged(tp: Any) -> tuple[str, dict[Any, type[BaseModel]]] | None:
    """A ``tagged_union``'s tag field and its members by tag value; None for any other type."""
    if typing.get_origin(tp) is not Annotated:
        return None
    union, *meta = typing.get_args(tp)
    tag = next((m.discriminator for m in meta if isinstance(m, FieldInfo) and isinstance(m.discriminator, str)), None)
    if tag is None:
        return None
    members = {}
    for member in typing.get_args(union):
        members[typing.get_args(member.model_fields[tag].annotation)[0]] = member
    return tag, members


def _step(step: Any) -> str:
    """One step of a key path as a message shows it: a key of a file is anyone's text, so one with a line break,
    a control character or megabytes of length is shown cut and escaped, never as itself."""
    text = str(step)
    return text if text.isprintable() and len(text) <= 60 else _show(step)


def _walk(cls: Any, loc: tuple, where: str) -> tuple[str, Any, Any, Any]:
    """The dotted path of ``loc`` (list items as [i], a bad mapping key as `key 'k'`), the type
    holding its last step, the type at its end, and that type as declared (not unwrapped)."""
    path, tp, parent = where, cls, None
    before_key, key, mapping = "", None, None
    for step in loc:
        if step == "[key]":  # the key itself is bad, not the value under it
            path, tp = f"{before_key} key {_show(key)}", typing.get_args(mapping)[0]
            continue
        tagged = _tagged(tp)
        if tagged is not None and step in tagged[1]:
            # pydantic names the member a tagged union chose by its tag; the file has no such key.
            tp = tagged[1][step]
            continue
        tp = _unwrap(tp)
        parent = tp
        origin = typing.get_origin(tp)
        if _is_model(tp):
            path = f"{path}.{_step(step)}" if path else _step(step)
            field = tp.model_fields.get(step)
            tp = field.annotation if field is not None else Any
        elif origin in (tuple, list):
            path += f"[{_step(step)}]"
            tp = typing.get_args(tp)[0]
        elif origin is dict:
            before_key, key, mapping = path, step, tp
            path = f"{path}.{_step(step)}"
            tp = typing.get_args(tp)[1]
        else:
            path = f"{path}.{_step(step)}" if path else _step(step)
            tp = Any
    return path, parent, _unwrap(tp), tp


def to_plain(obj: Any) -> Any:
    """A model as plain YAML/JSON-able values, in field order, infinity as "inf"."""
    if isinstance(obj, BaseModel):
        return {name: to_plain(getattr(obj, name)) for name in type(obj).model_fields}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_plain(v) for k, v in obj.items()}
    if isinstance(obj, float) and math.isinf(obj):
        return "inf"
    return obj
