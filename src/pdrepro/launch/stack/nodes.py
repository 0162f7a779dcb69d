"""The one-box stack's node records: RUN/nodes/prefill.json and RUN/nodes/decode.json, written by `stack up` before
its servers start, as a cluster launch writes each node's (`pdrepro doctor --role ROLE --out FILE`).

Both roles run on this box, so the node is read once and recorded twice: each record holds the checks held to its
role (its ports, what it needs) and the GPUs its server was given. A record is evidence for `pdrepro diagnose`, not
a gate: whatever its verdict it is written, and a step that cannot write it says so in one line and the stack starts
all the same. Written before the servers start, so the ports the servers will hold are checked free, as on a node
before its launch."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ...core import safewrite
from ...core.errors import UserError
from ...fabric import doctor, software
from ...fabric import noderecord as build
from ...rundir import noderecord

WHAT = "pdrepro stack up"


@dataclass(frozen=True)
class NodeAsk:
    """What each record is read against: the stack's scenario and inputs, the sysfs tree, each role's GPUs."""

    scenario: object                       # scenario.model.Scenario (light here: the command imports it)
    gpus: Mapping[str, tuple[int, ...]]    # role -> nvidia-smi indices (the plan's CUDA_VISIBLE_DEVICES, bus order)
    sysfs_root: Path = Path("/sys")
    model: Path | None = None
    dataset: Path | None = None
    advertise_ip: str | None = None
    python: str = sys.executable           # the interpreter the servers run: its packages are the record's software


def _folder(run: Path) -> Path:
    """RUN/nodes, made if missing; a link planted there (or anything not a folder) is refused, never written through."""
    folder = run / noderecord.NODES_DIR
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        safewrite.make_folder(folder, WHAT)
        return folder
    if stat.S_ISLNK(st.st_mode):
        raise UserError(f"{folder}: is a symlink; the run's node records are written into its own folder, not "
                        "through a link: remove the link")
    if not stat.S_ISDIR(st.st_mode):
        raise UserError(f"{folder}: is not a folder; move it away so the node records can be written there")
    return folder


def write(run: Path, ask: NodeAsk) -> list[tuple[Path, str]]:
    """Each role's record written into RUN/nodes (a second `stack up` into the folder replaces them); returns (path,
    verdict) per role. Raises what stops the step: the caller says it in one line and goes on."""
    folder = _folder(run)
    # A record an earlier `stack up` wrote here is not this start's: gone before a new one is read, so a step that
    # fails now leaves no record that claims to be this stack's node.
    for role in ask.gpus:
        old = folder / f"{role}.json"
        if old.is_file() and not old.is_symlink():
            old.unlink()
    sysfs_root = ask.sysfs_root
    if not sysfs_root.is_dir():
        raise UserError(f"--sysfs-root {sysfs_root}: not a directory; pass /sys or a captured copy of it")
    # /dev/infiniband belongs to this host: it is checked only when the tree read is this host's /sys.
    on_host = sysfs_root.resolve() == Path("/sys")
    base = dict(sysfs_root=sysfs_root, scenario=ask.scenario, model=ask.model, dataset=ask.dataset,
                advertise_ip=ask.advertise_ip, dev_dir=Path("/dev/infiniband") if on_host else None)
    facts = doctor.gather(doctor.Context(**base))  # type: ignore[arg-type]
    found = software.from_python(ask.python)
    written: list[tuple[Path, str]] = []
    for role, gpus in ask.gpus.items():
        ctx = doctor.Context(role=role, **base)  # type: ignore[arg-type]
        record = build.of_role(ctx, facts, found, gpus=gpus)
        path = folder / f"{role}.json"
        safewrite.write_file(path, record.model_dump_json(indent=2) + "\n", WHAT, root=run)
        written.append((path, record.verdict))
    return written


def record(run: Path, ask: NodeAsk, say: Callable[[str], None]) -> bool:
    """``write``, its outcome said in one line; never raises but for an interrupt (a record is no gate)."""
    try:
        written = write(run, ask)
    except UserError as exc:
        why = str(exc).splitlines()[0] if str(exc) else "no reason given"
    except Exception as exc:  # noqa: BLE001 - a hostile sysfs or a tool's answer: evidence lost, the stack goes on
        first = str(exc).splitlines()[0][:200] if str(exc) else ""
        why = f"{type(exc).__name__}{': ' + first if first else ''}"
    else:
        said = ", ".join(f"{path} (doctor verdict {verdict})" for path, verdict in written)
        # A verdict other than pass is doctor's view of the node (a box without RDMA fails it), not the stack's.
        note = ("; kept as evidence for `pdrepro diagnose`, not a gate (`pdrepro doctor --role ROLE` lists the checks)"
                if any(verdict != "pass" for _, verdict in written) else "")
        say(f"stack up: node records {said}{note}")
        return True
    say(f"stack up: no node record written ({why}); the stack starts without it, and `pdrepro diagnose` names the "
        f"MTU, GID, relaxed-ordering and placement causes unknown")
    return False
