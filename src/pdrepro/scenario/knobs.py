"""The tuning knobs a scenario may set: the environment variables each engine and backend reads, as data.

Each engine or backend that keeps a list names its file under pdrepro/knobdata/ (``knob_file``); the file is
generated from the pinned release's source by scripts/knobgen.py (``make knobs``) and names that source. A
list covers the prefixes it states (``listed_prefixes``): under them a name not in the list is no variable
the pinned code reads, so a scenario setting it is refused (a typo would otherwise change nothing, silently).
Prefixes without a list (UCX_*, which has hundreds) stand for all their variables.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

from .. import backends, engines
from ..core.errors import UserError

DATA_FOLDER = "knobdata"
# UCX names its transports' variables after them (UCX_<TL>_...): those of its InfiniBand/RoCE transports do
# nothing where UCX runs over TCP. A judgement from UCX's naming, not from a generated list.
UCX_RDMA_PREFIXES = ("UCX_IB_", "UCX_RC_", "UCX_DC_", "UCX_UD_", "UCX_MLX5_")


@dataclass(frozen=True)
class Knob:
    """One environment variable a server reads, as the pinned source states it."""

    name: str
    # The engine or backend module that reads it (its registry name) and which of the two it is.
    reader: str
    reader_kind: str
    # Where it is read: "<repo>@<ref>:<file>" of the source the list was generated from.
    source: str
    # The default the source states (as text), None where it states none (computed at run time or unset).
    default: str | None
    # The value's type where the source states it (int, float, bool, str), else None.
    type: str | None
    # True when only RDMA transports use it: over TCP it changes nothing.
    rdma_only: bool
    # The transports it acts in (rdma, tcp, hip, ...); empty when it acts whatever transport runs.
    only_in: tuple[str, ...]
    # Why rdma_only is what it is (the files that use it), for people.
    evidence: str
    # Environment variables are read once at start: changing one needs the servers restarted.
    restart: bool = True


@dataclass(frozen=True)
class KnobList:
    """One generated data file: its reader, its source and the prefixes it lists completely."""

    reader: str
    reader_kind: str
    file: str
    source: str
    listed_prefixes: tuple[str, ...]
    knobs: tuple[Knob, ...]

    def covers(self, name: str) -> bool:
        return name.startswith(self.listed_prefixes)


def _readers() -> list[tuple[str, str, str]]:
    """(reader name, kind, data file) of each engine and backend that keeps a list, each file once."""
    parts = [(n, "engine", engines.engine(n).knob_file) for n in engines.names()]
    parts += [(n, "backend", backends.backend(n).knob_file) for n in backends.names()]
    seen: dict[str, tuple[str, str, str]] = {}
    for name, kind, file in parts:
        if file:
            # mooncake_tcp is Mooncake with one switch: the first module naming a file reads it.
            seen.setdefault(file, (name, kind, file))
    return list(seen.values())


def _load(reader: str, kind: str, file: str) -> KnobList:
    path = resources.files("pdrepro") / DATA_FOLDER / file
    where = f"pdrepro/{DATA_FOLDER}/{file}"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        src = data["source"]
        source = f"{src['repo']}@{src['ref']}"
        knobs = tuple(Knob(name=k["name"], reader=data["reader"], reader_kind=kind, source=f"{source}:{k['file']}",
                           default=k.get("default"), type=k.get("type"), rdma_only=bool(k["rdma_only"]),
                           only_in=tuple(k.get("only_in", ())), evidence=k.get("evidence", "")) for k in data["knobs"])
        listed = tuple(data["listed_prefixes"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        # The package's own file: broken means a broken install, still said in one line.
        raise UserError(f"{where} is unreadable ({exc}); reinstall pdrepro or run make knobs") from None
    if data["reader"] != reader:
        raise UserError(f"{where} lists {data['reader']}'s knobs, not {reader}'s; run make knobs")
    return KnobList(reader=reader, reader_kind=kind, file=where, source=source, listed_prefixes=listed, knobs=knobs)


@cache
def lists() -> tuple[KnobList, ...]:
    """Every generated list the registries name, engines first."""
    return tuple(_load(*r) for r in _readers())


def knobs() -> tuple[Knob, ...]:
    """Every known knob, in the data's order (by reader, then name)."""
    return tuple(k for kl in lists() for k in kl.knobs)


@cache
def _by_name() -> dict[str, Knob]:
    return {k.name: k for k in knobs()}


def lookup(name: str) -> Knob | None:
    """The knob called ``name``, None where no generated list names it (a UCX_* variable, a typo)."""
    return _by_name().get(name)


def covering(name: str) -> KnobList | None:
    """The list whose prefixes cover ``name``: then ``name`` must be in it to be a variable anyone reads."""
    return next((kl for kl in lists() if kl.covers(name)), None)


def tcp_cannot_judge(name: str) -> str | None:
    """Why a box whose KV moves over TCP cannot judge ``name`` (it only acts over RDMA), None if it can."""
    knob = lookup(name)
    if knob is not None:
        if knob.only_in and "tcp" not in knob.only_in:
            kind = "RDMA" if knob.rdma_only else "/".join(knob.only_in)
            return (f"{name} acts only in {knob.reader}'s {kind} transports, not over TCP "
                    f"(from {knob.source}: {knob.evidence})")
        return None
    if name.startswith(UCX_RDMA_PREFIXES):
        return f"{name} configures one of UCX's InfiniBand/RoCE transports; over TCP UCX never uses it"
    return None
