"""The job files' templates (``targets/templates/``) and how values enter them.

A template is the fixed text of one kind of job file (a compose service, a compose file's head, the
sbatch script): what every launch of that kind does the same way. What differs per launch (argv,
environment, ports, paths) comes from the launch plan and is written in by ``fill``. Placeholders are
``@name`` (``string.Template`` with ``@`` as delimiter), so the ``$`` of shell and compose text stays
as it is in the template. A missing placeholder value is a bug here, not bad input: it raises KeyError.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files
from string import Template

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _At(Template):
    delimiter = "@"


@cache
def template(name: str) -> _At:
    """The template file NAME of templates/ (read once)."""
    return _At(files("pdrepro.launch.targets").joinpath("templates").joinpath(name).read_text())


_LONE = re.compile(r"^\s*@\{?([A-Za-z_][A-Za-z0-9_]*)\}?\s*$")


def fill(template_name: str, /, **values: str) -> str:
    """Template TEMPLATE_NAME with every placeholder given; a line holding only a placeholder whose
    value is empty (an optional block left out) is dropped whole."""
    lines = template(template_name).template.splitlines()
    kept = [line for line in lines if not ((m := _LONE.match(line)) and values.get(m.group(1)) == "")]
    return _At("\n".join(kept)).substitute(values).rstrip("\n") + "\n"


# Characters a YAML double-quoted scalar must not hold as themselves: its own quote and escape, control
# characters, and what YAML reads as a line break or byte-order mark (NEL, LS, PS, BOM).
_ESCAPED = {'"': '\\"', "\\": "\\\\"}
_BREAKS = {"\x85", "\u2028", "\u2029", "\ufeff"}


def yaml_str(value: str) -> str:
    """VALUE as one YAML double-quoted scalar that any YAML reader gives back unchanged. Not json.dumps: it
    writes characters past U+FFFF as surrogate pairs, which YAML readers do not join (PyYAML hangs on them)."""
    out = []
    for ch in value:
        code = ord(ch)
        if ch in _ESCAPED:
            out.append(_ESCAPED[ch])
        elif code < 0x20 or 0x7F <= code <= 0x9F or ch in _BREAKS or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def compose_str(value: str) -> str:
    """One YAML scalar that compose reads back unchanged, with compose's interpolation character doubled so
    a ``$`` in a path or an argument is passed on literally."""
    return yaml_str(value).replace("$", "$$")


def compose_list(words: list[str] | tuple[str, ...], indent: int) -> str:
    """A flow sequence of strings, a flag and its values on one line, as an operator reads a command."""
    lines: list[list[str]] = []
    for word in words:
        if not lines or word.startswith("--"):
            lines.append([])
        lines[-1].append(compose_str(word))
    pad = "\n" + " " * indent
    return "[" + ("," + pad).join(", ".join(line) for line in lines) + "]"


def compose_map(values: dict[str, str], indent: int) -> str:
    """A block mapping of strings, one KEY: "value" per line (empty text for an empty mapping)."""
    pad = " " * indent
    return "\n".join(f"{pad}{key if _NAME.match(key) else compose_str(key)}: {compose_str(value)}"
                     for key, value in values.items())
