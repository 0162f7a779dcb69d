"""Markdown reference of a file format, read off its shipped JSON Schema.

The top object comes first, then every object it refers to (``$defs``) in the order a reader
meets them, each as a table of its fields: type, whether it is required, default, limits and
the model's own description. Only JSON Schema keywords are read, so the page says exactly
what an editor checking the file against the schema would enforce.
"""

from __future__ import annotations

import json
from typing import Any

from .markdown import prose

Schema = dict[str, Any]

# Keyword -> how the page words it.
LIMITS = {
    "minimum": ">= {}", "maximum": "<= {}", "exclusiveMinimum": "> {}", "exclusiveMaximum": "< {}",
    "minLength": "at least {} characters", "maxLength": "at most {} characters",
    "minItems": "at least {} items", "maxItems": "at most {} items", "pattern": "matches `{}`",
    "format": "format {}",
}


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _anchor(name: str) -> str:
    return name.lower()


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _type(node: Schema) -> str:
    """One node's type in words; objects named in ``$defs`` become links to their section."""
    if "$ref" in node:
        name = _ref_name(node["$ref"])
        return f"[{name}](#{_anchor(name)})"
    if "const" in node:
        return f"`{_json(node['const'])}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{_json(v)}`" for v in node["enum"])
    for key in ("anyOf", "oneOf"):
        if key in node:
            return " or ".join(_type(option) for option in node[key])
    if "allOf" in node and len(node["allOf"]) == 1:
        return _type(node["allOf"][0])
    kind = node.get("type")
    if kind == "array":
        items = node.get("items")
        if "prefixItems" in node:
            return "list of [" + ", ".join(_type(i) for i in node["prefixItems"]) + "]"
        return f"list of {_type(items)}" if items else "list"
    if kind == "object" and isinstance(node.get("additionalProperties"), dict):
        return f"map of name to {_type(node['additionalProperties'])}"
    if isinstance(kind, list):
        return " or ".join(kind)
    return kind or "any value"


def _limits(node: Schema) -> list[str]:
    found = [text.format(node[key]) for key, text in LIMITS.items() if key in node]
    for option in node.get("anyOf", []) + node.get("oneOf", []):
        found += _limits(option)
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        found += [f"each {limit}" for limit in _limits(node["items"])]
    return found


def _cell(text: str) -> str:
    """Table cells hold one line and no bare pipe."""
    return " ".join(text.replace("|", "\\|").split())


def _refs(node: Any) -> list[str]:
    """Names of the ``$defs`` a node refers to, in reading order, each once."""
    found: list[str] = []
    if isinstance(node, dict):
        if "$ref" in node:
            found.append(_ref_name(node["$ref"]))
        for key, value in node.items():
            if key != "$defs":
                found += [name for name in _refs(value) if name not in found]
    elif isinstance(node, list):
        for value in node:
            found += [name for name in _refs(value) if name not in found]
    return list(dict.fromkeys(found))


def _object(name: str, node: Schema, level: int) -> list[str]:
    lines = [f"{'#' * level} {name}", ""]
    if node.get("description"):
        lines += [prose(node["description"].strip()), ""]
    properties: Schema = node.get("properties", {})
    required = set(node.get("required", []))
    if not properties:
        lines.append(f"Type: {_type(node)}.")
        return lines
    closed = node.get("additionalProperties") is False
    lines += ["Unknown keys are refused." if closed else "Other keys are allowed.", ""]
    lines += ["| key | type | required | default | limits | meaning |", "| --- | --- | --- | --- | --- | --- |"]
    for key, field in properties.items():
        default = f"`{_json(field['default'])}`" if "default" in field else ""
        cells = [f"`{key}`", _type(field), "yes" if key in required else "no", default,
                 "; ".join(_limits(field)), prose(field.get("description", ""))]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return lines


def render_schema(schema_text: str, title: str, name: str) -> str:
    """The page for one schema (its text as shipped under ``pdrepro/schemas``)."""
    schema: Schema = json.loads(schema_text)
    defs: Schema = schema.get("$defs", {})
    lines = [f"# {title}", "",
             f"The reference of every key, generated from `src/pdrepro/schemas/{name}.schema.json` "
             f"(`pdrepro schema {name}` prints it; an editor can check a file against it).", ""]
    lines += _object(schema.get("title", name), schema, 2)
    order = _refs(schema)
    # Objects reached only through other objects follow the ones that name them.
    index = 0
    while index < len(order):
        for nested in _refs(defs.get(order[index], {})):
            if nested not in order:
                order.append(nested)
        index += 1
    order += [n for n in defs if n not in order]
    for def_name in order:
        lines += [""] + _object(def_name, defs[def_name], 2)
    return "\n".join(lines) + "\n"
