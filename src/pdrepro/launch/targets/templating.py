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

import yaml

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


# ---- block YAML (the Kubernetes manifests) ----------------------------------

# YAML 1.1's implicit types, as PyYAML resolves them: a plain word they match is read as no string.
_RESOLVER = yaml.resolver.Resolver()
# What other YAML readers (Kubernetes' reads YAML 1.1 the Go way) take for a boolean or a number that PyYAML
# leaves a string: y/n, and whatever Go's number parsers accept (1e5, 0o17, inf, 0x1p-2).
_GO_BOOL = {"y", "Y", "n", "N"}
_GO_INT = re.compile(r"^[-+]?(0[xX][0-9a-fA-F]+|0[oObB]?[0-9]+|[0-9]+)$")
_GO_HEX_FLOAT = re.compile(r"^[-+]?0[xX][0-9a-fA-F.]*[pP][-+]?[0-9]+$")


def _number_elsewhere(value: str) -> bool:
    bare = value.replace("_", "")
    if _GO_INT.match(bare) or _GO_HEX_FLOAT.match(bare):
        return True
    try:
        float(bare)
    except ValueError:
        return False
    return True


def _plain(value: str) -> bool:
    """Whether VALUE reads back as this very string written plain, in block context."""
    if not value or value[0] == " " or value[-1] == " " or not all(" " <= ch <= "~" for ch in value):
        return False
    if value.startswith(("---", "...")) or value[0] in "#,[]{}&*!|>'\"%@`":
        return False
    if value[0] in "?:-" and (len(value) == 1 or value[1] == " "):
        return False
    if ": " in value or value.endswith(":") or " #" in value:
        return False
    if _RESOLVER.resolve(yaml.ScalarNode, value, (True, False)) != "tag:yaml.org,2002:str":
        return False
    return value not in _GO_BOOL and not _number_elsewhere(value)


def yaml_scalar(value: str) -> str:
    """VALUE as one block-context YAML scalar on one line that reads back as the same string: plain when it
    can be, in single quotes when it is printable ASCII, else through yaml_str."""
    if _plain(value):
        return value
    if all(" " <= ch <= "~" for ch in value):
        return "'" + value.replace("'", "''") + "'"
    return yaml_str(value)


def yaml_list(words: list[str] | tuple[str, ...], indent: int) -> str:
    """A block sequence of strings, one `- word` per line at INDENT columns."""
    pad = " " * indent
    return "\n".join(f"{pad}- {yaml_scalar(w)}" for w in words)


def _in_block(ch: str) -> bool:
    # What a literal block holds as itself: no control character (a tab included: readers differ on it), no
    # line break but LF, no byte-order mark, no lone surrogate.
    code = ord(ch)
    return ch == "\n" or (0x20 <= code < 0x7F) or (code >= 0xA0 and ch not in _BREAKS and not 0xD800 <= code <= 0xDFFF)


def yaml_text(value: str, indent: int) -> str:
    """VALUE, a script or a file's text, as a literal block (`|`) whose lines sit at INDENT columns, which
    must be two past the column of its key or of its `-`; a value of one line, or one holding what a block
    cannot, as yaml_scalar writes it."""
    if "\n" not in value or not all(_in_block(ch) for ch in value):
        return yaml_scalar(value)
    # A first line starting with a space (or empty) would mislead the reader's guess of the indentation: say it.
    hint = "2" if value[0] in " \n" else ""
    chomp = "-" if not value.endswith("\n") else ("+" if value == "\n" or value.endswith("\n\n") else "")
    lines = (value[:-1] if value.endswith("\n") else value).split("\n")
    pad = " " * indent
    # Trailing empty lines are kept (`+`) as lines of the indentation alone, so a template's end does not lose them.
    last = len(lines)
    while chomp == "+" and last > 0 and lines[last - 1] == "":
        last -= 1
    body = [pad + line if line else ("" if i < last else pad) for i, line in enumerate(lines)]
    return f"|{hint}{chomp}\n" + "\n".join(body)


def log_wrapper(log: str) -> str:
    """The bash script a server container runs as ``bash -c SCRIPT ARGV...`` (compose and Kubernetes alike): the
    server's command (``$0 "$@"``) run unchanged, its output appended to ``log`` (a shell word: a quoted path, or
    one naming a variable) and copied to the container's own output. The server is not exec'd into bash's place:
    when it exits, its container stops every process left, so a tee behind it could die before it wrote the
    server's last lines (the ones that say why it died). So bash stays, hands a stop signal on to the server (as
    PID 1 without a handler the server would ignore it), waits for it, then for tee to drain the pipe, and exits
    with the server's status. A FIFO, not a process substitution, so tee's pid is known to wait for."""
    return ('pipe=$(mktemp -u) && mkfifo "$pipe" || exit 125; '
            f'tee -a {log} < "$pipe" & copier=$!; '
            '"$0" "$@" > "$pipe" 2>&1 & server=$!; '
            "trap 'kill -TERM \"$server\" 2>/dev/null' TERM INT; "
            'while :; do wait "$server"; status=$?; kill -0 "$server" 2>/dev/null || break; done; '
            'wait "$copier"; exit "$status"')
