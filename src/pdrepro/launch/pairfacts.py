"""What the prefill and decode servers must agree on, read from a rendered launch or from a scenario.

The KV cache moves page by page between the two servers, each side addressing pages in its own layout, so
the page size (``--page-size``), the KV layout (the cache's data type, ``--kv-cache-dtype``, and the attention
backend that lays it out, ``--attention-backend``) and the tensor-parallel size (``--tp-size``) of every
prefill server are held against every decode server's. Flags are read by meaning (scenario.serverflags:
any spelling the server's parser takes); a flag not given is the server's default, the same on both sides.

A rendered launch (``pdrepro render``'s folder, any target) is read for the servers' argv wherever it holds
them: the YAML files (compose, onebox, Kubernetes) as lists of words, the rest (the SLURM script, the command
listings) as shell lines. Each file through the capped reader; nothing in the folder is written.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..core import runfile
from ..core.errors import UserError
from ..engines.registry import ENGINES
from ..scenario import serverflags

# The facts, each as (field name in the report, the server's fields it is made of).
FACTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("page size", ("page_size",)),
    ("KV layout", ("kv_cache_dtype", "attention_backend")),
    ("TP", ("tp_size",)),
)
DEFAULT = "default"
RENDERED = runfile.Kind("rendered launch file", 4 * runfile.MiB,
                        fix="it is not a file `pdrepro render` writes: render the launch again into a fresh folder")
_MODE = "disaggregation_mode"
_MAX_FILES = 200  # a rendered launch is a handful of files; a folder of thousands is not one


@dataclass(frozen=True)
class RoleFacts:
    """A role's servers: each fact's values over them (one value when they agree), and where they were read."""

    role: str
    values: dict[str, tuple[str, ...]]
    source: str


def _value(argv: list[str], fields: tuple[str, ...]) -> str:
    parts = []
    for dest in fields:
        v = serverflags.value_of(argv, dest)
        parts.append(f"{dest.replace('_', '-')} {v if v not in (None, '') else DEFAULT}")
    return ", ".join(parts) if len(parts) > 1 else parts[0].split(" ", 1)[1]


def facts_of(argv: list[str]) -> dict[str, str]:
    """Each fact of one server's argv."""
    return {name: _value(argv, fields) for name, fields in FACTS}


def _server_argv(words: list[str]) -> list[str] | None:
    """The words after the server's module (or all of them), when they start a disaggregated server."""
    if not any(w == "--disaggregation-mode" or w.startswith("--disaggregation-mode=") for w in words):
        return None
    # Any registered engine's server module marks where the server's own flags begin.
    for module in (e.server_module for e in ENGINES.values()):
        if module in words:
            return words[words.index(module) + 1:]
    return words


def _lists(node) -> list[list[str]]:
    if isinstance(node, dict):
        return [found for v in node.values() for found in _lists(v)]
    if isinstance(node, list):
        if node and all(isinstance(w, str) for w in node):
            return [node]
        return [found for v in node for found in _lists(v)]
    return []


def _shell_lines(text: str) -> list[list[str]]:
    out = []
    for line in text.replace("\\\n", " ").splitlines():
        if line.lstrip().startswith("#"):
            continue
        try:
            out.append(shlex.split(line))
        except ValueError:
            continue  # a line no shell would read: it holds no server argv
    return out


def _argvs(path: Path) -> list[list[str]]:
    text = runfile.read_text(path, kind=RENDERED)
    if path.suffix in (".yaml", ".yml"):
        try:
            docs = list(yaml.safe_load_all(text))
        except yaml.YAMLError as exc:
            raise UserError(f"{path}: not YAML ({str(exc).splitlines()[0]}); render the launch again") from None
        candidates = [words for doc in docs for words in _lists(doc)]
    else:
        candidates = _shell_lines(text)
    return [argv for words in candidates if (argv := _server_argv(words)) is not None]


def _gather(found: dict[str, dict[str, set[str]]], source: str) -> dict[str, RoleFacts]:
    return {role: RoleFacts(role, {k: tuple(sorted(v)) for k, v in facts.items()}, source)
            for role, facts in found.items()}


def from_deploy(folder: Path) -> dict[str, RoleFacts]:
    """The facts of each role's servers in the rendered launch at FOLDER; one line (exit 2) when it holds none."""
    if not folder.is_dir():
        raise UserError(f"--deploy {folder}: not a folder; give the folder `pdrepro render --out` wrote")
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())[:_MAX_FILES + 1]
    if len(files) > _MAX_FILES:
        raise UserError(f"--deploy {folder}: holds more than {_MAX_FILES} files, which no rendered launch does; "
                        "give the folder `pdrepro render --out` wrote")
    found: dict[str, dict[str, set[str]]] = {}
    for path in files:
        if path.suffix in (".env", ".json"):  # settings and records (nodes/*.json, ib_devices.json): no argv
            continue
        for argv in _argvs(path):
            role = serverflags.value_of(argv, _MODE)
            if role not in ("prefill", "decode"):
                continue
            for name, value in facts_of(argv).items():
                found.setdefault(role, {}).setdefault(name, set()).add(value)
    missing = [r for r in ("prefill", "decode") if r not in found]
    if missing:
        raise UserError(f"--deploy {folder}: no {' and no '.join(missing)} server's command in it; give the folder "
                        "`pdrepro render --out` wrote for a disaggregated scenario")
    return _gather(found, f"rendered launch {folder}")


def from_scenario(scenario) -> dict[str, RoleFacts]:
    """The facts the scenario gives each role: its TP per role and the server flags both roles share."""
    launch = scenario.launch
    extra = list(launch.extra_server_args) if launch is not None else []
    found: dict[str, dict[str, set[str]]] = {}
    for role in ("prefill", "decode"):
        argv = ["--tp-size", str(scenario.parallel.tp(role)), *extra]
        found[role] = {name: {value} for name, value in facts_of(argv).items()}
    return _gather(found, f"scenario {scenario.name}")
