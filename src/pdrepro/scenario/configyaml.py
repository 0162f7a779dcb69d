"""The one parser of the YAML files people write (scenarios, thresholds): YAML read as it is written.

PyYAML implements YAML 1.1, whose readings surprise: ``042`` is octal 34, ``1:30`` is 90, ``1_000`` is
1000, ``yes``/``on`` are true, ``2026-07-15`` is a date, yet ``4e2`` is the string "4e2". Here the plain
scalars resolve as YAML 1.2's core schema says instead (decimal integers, floats with a dot or an exponent,
``.inf``/``.nan``, true/false, null); everything else stays the text written, so a number field given
``042`` or ``1:30`` is refused by the schema with its field named, and a text field keeps what was written.

Two more things no config file means: a key given twice (PyYAML lets the second win silently; a repeated
``thresholds:`` block then replaced every bound) is an error naming the key and both lines, and aliases
that expand past ``MAX_VALUES`` values (the "billion laughs") are refused before anything walks them.
"""

from __future__ import annotations

import re

import yaml
from yaml.nodes import MappingNode, SequenceNode

from ..core.errors import UserError

# A scenario holds a few hundred values; this is far past any real one and still instant to count.
MAX_VALUES = 20_000

_MERGE = "tag:yaml.org,2002:merge"


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core scalars, no duplicate keys and a count of the aliases used."""

    aliases = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        if isinstance(node, MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE:
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    if key in seen:
                        raise DuplicateKey(key, seen[key], line)
                    seen[key] = line
                except TypeError:
                    continue  # an unhashable key: the constructor below says so
        return super().construct_mapping(node, deep)


class DuplicateKey(Exception):
    def __init__(self, key, first: int, second: int):
        super().__init__(key)
        self.key, self.first, self.second = key, first, second


def _core_schema_resolvers() -> None:
    kept = {"tag:yaml.org,2002:null", _MERGE}
    _Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag in kept]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    _Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                  list("tTfF"))
    _Loader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$"),
                                  list("-+0123456789"))
    _Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^(?:[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+"
                   r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
        list("-+0123456789."))


_core_schema_resolvers()


def _expanded_size_exceeds(node, limit: int) -> bool:
    """Whether ``node`` with every alias expanded holds more than ``limit`` values; stops counting there."""
    stack, count = [node], 0
    while stack:
        current = stack.pop()
        count += 1
        if count > limit:
            return True
        if isinstance(current, MappingNode):
            for key, value in current.value:
                stack.extend((key, value))
        elif isinstance(current, SequenceNode):
            stack.extend(current.value)
    return False


def parse(text: str, source: str) -> object:
    """The data in ``text`` (the file ``source``), or a UserError naming it; never a long line."""
    try:
        loader = _Loader(text)
    except yaml.reader.ReaderError as exc:
        # The reader checks every character before parsing: a control character fails here, outside the parse.
        raise UserError(f"{source}: holds character U+{exc.character:04X} at offset {exc.position}, which YAML "
                        "does not allow; remove it") from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size_exceeds(node, MAX_VALUES):
            if loader.aliases:
                raise UserError(f"{source}: expands to more than {MAX_VALUES} values through its {loader.aliases} "
                                "YAML alias(es) (*name); write the values out instead of nesting aliases")
            raise UserError(f"{source}: holds more than {MAX_VALUES} values, where a scenario holds a few hundred; "
                            "check that this is the file meant")
        return loader.construct_document(node)
    except DuplicateKey as dup:
        raise UserError(f"{source}: key {_short(dup.key)} is given twice (line {dup.first} and line {dup.second}); "
                        "YAML would silently keep only the second, keep one of them") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise UserError(f"{source}: not valid YAML{where}; fix the syntax") from None
    finally:
        loader.dispose()


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
