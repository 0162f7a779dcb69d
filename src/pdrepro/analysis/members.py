"""Members prove who they are: each member of a composite run judged by its own files against the plan.

A composite's plan (arms-state.json, tune-plan.json, load-state.json, the scenarios it wrote) says which member is
which; a folder's name and a plan file are claims anyone can edit or copy. What a member's own files show is
held against them here, once for every kind (ab, tune, compare, load):

- its folder: a link, or one that resolves outside the composite, is refused before anything is read through it;
- its scenario: the fingerprint the member's own sweep recorded equals the plan's scenario for that member;
- its backend and stack: the stack record's stack kind, roles and transfer backend, and which backend's transport
  lines its servers' logs hold, equal the plan's (a member rendered for a cluster has no stack record: its
  scenario, bench record and logs are the evidence);
- its bench record: its prompt lengths, number of prompts, concurrency and rate are the plan's;
- its content: siblings never share a bench file or a server log byte for byte (a copy is named, whatever the
  records say);
- its record (rundir.memberrecord), where it has one: the composite's id and its own name.

Each contradiction is a typed finding (rundir.memberrecord.MemberFinding) that the kind's judge turns into a FAIL
naming the member and both values; a record that cannot be read is bad input (UserError, exit 2).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .. import backends
from ..core import runfile
from ..core.errors import UserError
from ..core.roles import Role
from ..rundir import RunDir, memberrecord
from ..rundir.layout import STACK_FILE
from ..rundir.memberrecord import MemberFinding
from ..scenario.model import Scenario, load_scenario
from ..scenario.recorded import recorded_fingerprint


@dataclass(frozen=True)
class Claim:
    """What the plan says of one member: its name (and folder, relative to the composite), the scenario it ran,
    and where known the stack kind it ran ("disaggregated", "regular") and its transfer backend (registry name;
    where site options can change it, e.g. --force-tcp, the members are held to each other instead)."""

    name: str
    folder: str
    scenario: Scenario | None = None
    stack: str | None = None
    backend: str | None = None


def finding(member: str, about: str, claimed: object, found: object) -> MemberFinding:
    return MemberFinding(member=member, about=about, claimed=str(claimed), found=str(found))  # type: ignore[arg-type]


def folder_findings(run: Path, claims: Iterable[Claim]) -> tuple[list[MemberFinding], list[Claim]]:
    """(the members refused for their folder, the members whose folders may be read)."""
    refused, usable = [], []
    for c in claims:
        why = memberrecord.folder_problem(run, c.folder)
        if why is None:
            usable.append(c)
        else:
            refused.append(finding(c.name, "folder", f"a folder {c.folder} inside the run", why))
    return refused, usable


# ---- a member's own evidence ----------------------------------------------------------------------------------

UNREADABLE = "unreadable"


def _stack(member: RunDir) -> dict | None:
    """The member's stack record as far as identity needs it: its stack kind, transfer backend and roles. One
    that cannot be read as a record shows the stack kind UNREADABLE: evidence that proves nothing, so a member
    whose plan names its stack fails on it (the comparison still reports what was measured)."""
    p = member.root / STACK_FILE
    if not p.exists() and not p.is_symlink():
        return None
    try:
        data = runfile.read_json(p)
    except (OSError, ValueError, RecursionError, UserError):
        data = None
    procs = data.get("processes") if isinstance(data, dict) else None
    kind, backend = (data.get("stack", "disaggregated"), data.get("transfer_backend")) if isinstance(data, dict) \
        else (None, None)
    if not isinstance(procs, list) or not all(isinstance(x, dict) and isinstance(x.get("role"), str) for x in procs) \
            or not isinstance(kind, str) or not (backend is None or isinstance(backend, str)):
        return {"stack": f"{UNREADABLE} record", "backend": None, "roles": []}
    return {"stack": kind, "backend": backend, "roles": sorted({x["role"] for x in procs} - {Role.ROUTER.value})}


def _log_backends(member: RunDir) -> set[str]:
    """The backends whose own transport lines the member's server logs hold (each backend reads its own)."""
    found: set[str] = set()
    logs = [p for role in (Role.PREFILL.value, Role.DECODE.value) for p in member.role_logs(role)]
    for name in backends.names():
        reader = backends.backend(name)
        for p in logs:
            try:
                if reader.scan_latest_start(p.stem, runfile.lines(p)).verdict != "unknown":
                    found.add(name)
                    break
            except OSError:
                continue
    return found


def _log_shape(member: RunDir) -> str | None:
    """The stack kind the member's server logs show: prefill and decode logs, or regular servers' logs."""
    has = {role.value: bool(member.role_logs(role.value)) for role in (Role.PREFILL, Role.DECODE, Role.REGULAR)}
    if has[Role.REGULAR.value] and not (has[Role.PREFILL.value] or has[Role.DECODE.value]):
        return "regular"
    if (has[Role.PREFILL.value] or has[Role.DECODE.value]) and not has[Role.REGULAR.value]:
        return "disaggregated"
    return None


def _shape_of(roles: list[str]) -> str | None:
    """The stack kind a set of server roles makes: prefill and decode apart, or regular servers only."""
    if set(roles) == {Role.PREFILL.value, Role.DECODE.value}:
        return "disaggregated"
    return "regular" if set(roles) == {Role.REGULAR.value} else None


def bench_record(path: Path) -> dict:
    """The bench client's record in ``path`` (its last JSON line); one that is no record: one line, exit 2."""
    last = ""
    try:
        for line in runfile.lines(path, kind=runfile.BENCH):
            if line.strip():
                last = line
        data = json.loads(last)
    except (OSError, ValueError, RecursionError) as exc:
        raise UserError(f"{path}: unreadable as a bench record ({str(exc)[:120]}); restore the client's file") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: not a bench record (a JSON object); restore the client's file")
    return data


def readable_bench(path: Path) -> dict | None:
    """The bench record, None where it cannot be read: the member's own analysis names that file as bad input
    and fails on it, so identity has nothing to add (and the other members are still judged)."""
    try:
        return bench_record(path)
    except UserError:
        return None


def sent(record: Mapping) -> int | None:
    """Requests the client sent, as its record lists them (per-request lists), else completed plus failed."""
    for key in ("input_lens", "errors"):
        if isinstance(record.get(key), list):
            return len(record[key])
    done = record.get("completed")
    return done if isinstance(done, int) else None


def _rate(value: object) -> float | None:
    """A rate as a number, None for 'all at once' (the client writes inf)."""
    if value is None or value == "inf":
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isinf(number) else number


def bench_findings(name: str, record: Mapping, length: int, prompts: int, concurrency: int | None,
                   rate: float | None) -> list[MemberFinding]:
    """A bench record held to the length, prompts, concurrency and rate the plan gives the member."""
    out = []
    got_len = record.get("random_input_len")
    if isinstance(got_len, int) and got_len != length:
        out.append(finding(name, "bench", f"prompt length {length}", f"prompt length {got_len} (its bench record)"))
    n = sent(record)
    if n is not None and n != prompts:
        out.append(finding(name, "bench", f"{prompts} prompts at length {length}",
                           f"{n} prompts at length {length} (its bench record)"))
    if "max_concurrency" in record and record.get("max_concurrency") != concurrency:
        out.append(finding(name, "bench", f"concurrency {concurrency or 'uncapped'}",
                           f"concurrency {record.get('max_concurrency') or 'uncapped'} (its bench record)"))
    if "request_rate" in record and _rate(record.get("request_rate")) != rate:
        out.append(finding(name, "bench", f"request rate {rate if rate is not None else 'inf'}",
                           f"request rate {record.get('request_rate')} (its bench record)"))
    return out


def _digest(path: Path) -> str | None:
    """sha256 of a regular, non-empty file (never through a link); None for anything else (an empty file is no
    measurement, so two empty files are no copy)."""
    try:
        if os.lstat(path).st_size == 0:
            return None
    except OSError:
        return None
    return runfile.sha256(path)


def content(member: RunDir) -> dict[str, str]:
    """digest -> the file (relative to the member) for its bench files and its servers' logs: records of one
    measurement each, with per-request timings and timestamps no other run repeats byte for byte (a router's
    log, which may hold no timestamp, is left out)."""
    out: dict[str, str] = {}
    files = [member.bench_file(L) for L in member.bench_lengths()]
    if not member.logs_dir.is_symlink():
        files += [p for role in (Role.PREFILL, Role.DECODE, Role.REGULAR) for p in member.role_logs(role.value)]
    for p in files:
        d = _digest(p)
        if d is not None:
            out.setdefault(d, f"{p.parent.name}/{p.name}")
    return out


def copies(members: Mapping[str, RunDir]) -> list[MemberFinding]:
    """Siblings holding a byte-identical bench file or server log: each later member named a copy of the first."""
    seen: dict[str, tuple[str, str]] = {}
    out = []
    for name, member in members.items():
        for d, rel in content(member).items():
            if d in seen and seen[d][0] != name:
                first, first_rel = seen[d]
                out.append(finding(name, "copy", f"a run of its own, apart from {first}",
                                   f"{rel} identical to {first}'s {first_rel}"))
                break
            seen.setdefault(d, (name, rel))
    return out


def record_findings(name: str, member: RunDir, kind: str, composite: str | None) -> list[MemberFinding]:
    rec = memberrecord.read(member.root)
    if rec is None:
        return []  # a member from before records: the content checks judge it
    out = []
    if rec.member != name:
        out.append(finding(name, "record", f"member {name}", f"member {rec.member} (its {memberrecord.FILE})"))
    if rec.kind != kind or (composite is not None and rec.composite != composite):
        out.append(finding(name, "record", f"a member of {kind} run {composite or '(no id recorded)'}",
                           f"a member of {rec.kind} run {rec.composite} (its {memberrecord.FILE})"))
    return out


def own_fingerprint(member: RunDir) -> str | None:
    """The scenario the member's own sweep recorded (provenance.json), else its scenario.yaml's."""
    recorded = recorded_fingerprint(member)
    if recorded is not None or not member.scenario_file.is_file():
        return recorded
    return load_scenario(member.scenario_file).fingerprint


def member_findings(name: str, member: RunDir, claim: Claim) -> list[MemberFinding]:
    """One member's own files against its claim: scenario, backend, stack shape, bench records."""
    out: list[MemberFinding] = []
    scenario = claim.scenario
    if scenario is not None:
        own = own_fingerprint(member)
        if own is not None and own != scenario.fingerprint:
            out.append(finding(name, "scenario", f"{scenario.name} (fingerprint {scenario.fingerprint[:12]})",
                               f"fingerprint {own[:12]} (its own provenance.json)"))
    stack = _stack(member)
    want_backend = claim.backend
    if stack is not None and want_backend and stack["backend"] and stack["backend"] != want_backend:
        out.append(finding(name, "backend", want_backend, f"{stack['backend']} (its {STACK_FILE})"))
    if want_backend and (claim.stack or "disaggregated") == "disaggregated":
        seen = _log_backends(member)
        if seen and want_backend not in seen:
            out.append(finding(name, "backend", want_backend,
                               f"{', '.join(sorted(seen))} (the transport lines in its server logs)"))
    if claim.stack is not None:
        shown = stack["stack"] if stack is not None else _log_shape(member)
        where = STACK_FILE if stack is not None else "its server logs"
        if shown is not None and shown != claim.stack:
            out.append(finding(name, "stack", f"a {claim.stack} stack", f"a {shown} stack ({where})"))
        elif stack is not None and stack["roles"] and _shape_of(stack["roles"]) != claim.stack:
            # The record's kind agrees but its processes do not (a hand-edited record): the roles decide.
            out.append(finding(name, "stack", f"a {claim.stack} stack",
                               f"servers of roles {', '.join(stack['roles'])} (its {STACK_FILE})"))
    if scenario is not None:
        sweep = scenario.sweep
        for L in member.bench_lengths():
            if L not in sweep.prompt_lens:
                out.append(finding(name, "bench", f"lengths {', '.join(map(str, sweep.prompt_lens))}",
                                   f"a bench file of length {L}"))
                continue
            record = readable_bench(member.bench_file(L))
            if record is not None:
                out += bench_findings(name, record, L, sweep.num_prompts, sweep.max_concurrency,
                                      _rate(sweep.request_rate))
    return out


# ---- per kind: the plan's claims, then the same checks ------------------------------------------------------------

def judge_members(run: Path, claims: list[Claim], kind: str, composite: str | None,
                  one_backend: bool = False) -> list[MemberFinding]:
    """Every member's findings, its folder first (a refused folder is read no further), then siblings' content.
    ``one_backend``: every member ran one stack configuration's backend (a tune, a comparison), so each member's
    stack record must name the backend the first member's names."""
    out, usable = folder_findings(run, claims)
    present = {c.name: RunDir(Path(run) / c.folder) for c in usable if (Path(run) / c.folder).is_dir()}
    first: dict[str, tuple[str, str]] = {}  # evidence -> (the first member showing it, what it showed)
    for c in usable:
        if c.name not in present:
            continue
        out += record_findings(c.name, present[c.name], kind, composite)
        out += member_findings(c.name, present[c.name], c)
        if not one_backend:
            continue
        stack = _stack(present[c.name])
        # The stack record's backend, and the backends whose transport lines the servers' logs hold (a member
        # rendered for a cluster has only the logs): each the same for every member as for the first.
        shown = {STACK_FILE: stack["backend"] if stack is not None else None,
                 "the transport lines in its server logs": ", ".join(sorted(_log_backends(present[c.name]))) or None}
        for where, value in shown.items():
            if value is None:
                continue
            if where not in first:
                first[where] = (c.name, value)
            elif value != first[where][1]:
                out.append(finding(c.name, "backend", f"{first[where][1]}, as {first[where][0]} ran it (one backend "
                                   "for every member)", f"{value} ({where})"))
    return out + copies(present)


def of_member(findings: Iterable[MemberFinding], name: str) -> list[MemberFinding]:
    return [f for f in findings if f.member == name]
