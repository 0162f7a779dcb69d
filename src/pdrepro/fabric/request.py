"""What one `pdrepro doctor` is asked, as a typed request (issue 33 item 3): a node's checks (``DoctorRequest``)
or the pair check of two nodes' records (``PairRequest``).

The command line parses into one of them (commands.doctor, through ``doctor_request``) and `pdrepro repro` builds
them for its preflight and its pair check (pdrepro.pipeline), so the doctor stage is handed the same type either
way, never a word list rebuilt from words. Each field is named as doctor's option stores it: the command reads a
request as it reads its parsed command line. Light on purpose (dataclasses, paths): the CLI's --help stays fast.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import UserError


@dataclass(frozen=True)
class DoctorRequest:
    """One node's checks: the role it is held to (None: laptop/smoke rules), the sysfs tree read, the inputs checked
    (model, dataset, scenario, the advertised address), what is recorded of its software (``image`` or ``python``)
    and where its record goes (``out``; ``json``: printed), ``save_sysfs``: where the tree read is also copied."""

    role: str | None = None
    sysfs_root: Path = Path("/sys")
    json: bool = False
    model: Path | None = None
    dataset: Path | None = None
    advertise_ip: str | None = None
    scenario: str | None = None
    save_sysfs: Path | None = None
    out: Path | None = None
    image: str | None = None
    python: str | None = None
    func: object = field(default=None, compare=False, repr=False)  # what the parsed command line carries

    @classmethod
    def from_args(cls, args) -> DoctorRequest:
        """The request a parsed `pdrepro doctor` command line without --pair (or a request) holds."""
        if isinstance(args, cls):
            return args
        if getattr(args, "deploy", None) is not None:
            raise UserError("--deploy is read by the pair check only: pass it with --pair PREFILL_RECORD DECODE_RECORD")
        return cls(**_values(cls, args))


@dataclass(frozen=True)
class PairRequest:
    """Two nodes' records held against each other (``pair``: the prefill node's, then the decode node's), with the
    launch's facts read from a scenario or a rendered launch (``deploy``); ``json``: the findings as JSON."""

    pair: tuple[Path, Path]
    scenario: str | None = None
    deploy: Path | None = None
    json: bool = False
    func: object = field(default=None, compare=False, repr=False)

    @classmethod
    def from_args(cls, args) -> PairRequest:
        if isinstance(args, cls):
            return args
        values = _values(cls, args)
        prefill, decode = values["pair"]
        return cls(**{**values, "pair": (Path(prefill), Path(decode))})


def doctor_request(args) -> DoctorRequest | PairRequest:
    """The request a parsed `pdrepro doctor` command line (or either request) holds: --pair makes it a pair check,
    which looks at nothing on this node."""
    if isinstance(args, (DoctorRequest, PairRequest)):
        return args
    if getattr(args, "pair", None) is not None:
        return PairRequest.from_args(args)
    return DoctorRequest.from_args(args)


def _values(cls, args) -> dict:
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
