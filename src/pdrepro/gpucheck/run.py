"""Drive the two sides: size the buffers from a scenario, move, verify, report."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal, TypeGuard, get_args

from ..core import runfile
from ..core.errors import UserError
from ..core.safewrite import open_log
from ..core.units import bandwidth_GB_s, human_bytes
from ..host.mooncake_engine import set_transport_env
from ..parsers.mooncake_log import detect, fallback_reason
from ..rundir import engineceiling
from ..rundir.contract import write_json_atomic
from . import pattern

# How one request's KV is cut into the transfer requests of one batch: blocks of --block-mib; one
# block; one K and one V block per layer (2 x num_hidden_layers), the shape of SGLang's per-layer buffers.
Layout = Literal["blocks", "one", "layers"]
LAYOUTS: tuple[str, ...] = get_args(Layout)


def is_layout(name: str) -> TypeGuard[Layout]:
    return name in LAYOUTS


@dataclass(frozen=True)
class Settings:
    sizes: tuple[tuple[int, int], ...]   # (prompt_len, bytes one TP rank sends)
    repeats: int
    block_bytes: int
    gpus: tuple[int, int]                # (prefill, decode); the same id twice: both sides share one GPU
    memory: Literal["gpu", "host"]
    transport: Literal["auto", "tcp", "rdma"]
    direction: Literal["write", "read"]  # write: prefill pushes | read: decode pulls
    seed: int
    timeout_s: float
    out: Path
    layouts: tuple[Layout, ...] = ("blocks",)   # each measured at every size
    layers: int = 1                          # the model's num_hidden_layers, for the per-layer layout

    def layout_block_bytes(self, layout: Layout, nbytes: int) -> int:
        if layout == "one":
            return nbytes
        if layout == "layers":
            return -(-nbytes // (2 * self.layers))  # K and V of each layer, one block each
        return self.block_bytes


@dataclass
class Row:
    prompt_len: int
    nbytes: int
    seconds: list[float] = field(default_factory=list)
    verified: int = 0
    failures: list[str] = field(default_factory=list)
    layout: Layout = "blocks"
    blocks: int = 1                      # transfer requests in the batch

    @property
    def median_GB_s(self) -> float | None:
        return bandwidth_GB_s(self.nbytes, statistics.median(self.seconds)) if self.seconds else None


class Side:
    """A child process speaking one JSON line per request."""

    def __init__(self, role: str, gpu: int, fill: bool, settings: Settings, env: dict) -> None:
        self.role = role
        self.log_path = settings.out / f"{role}.log"
        self._log = open_log(self.log_path, "gpu-check")
        nbytes = max(n for _, n in settings.sizes)
        cmd = [sys.executable, "-m", "pdrepro.gpucheck.side", role, "--gpu", str(gpu), "--bytes", str(nbytes),
               "--memory", settings.memory, "--seed", str(settings.seed)] + (["--fill"] if fill else [])
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                     text=True, env=env)
        assert self.proc.stdin is not None and self.proc.stdout is not None  # both pipes, asked for above
        self._to_side, self._from_side = self.proc.stdin, self.proc.stdout
        self.timeout_s = settings.timeout_s

    def ask(self, **req) -> dict:
        if req:
            self._to_side.write(json.dumps(req) + "\n")
            self._to_side.flush()
        answer: list[str] = []
        reader = threading.Thread(target=lambda: answer.append(self._from_side.readline()), daemon=True)
        reader.start()
        reader.join(self.timeout_s)
        if not answer:
            raise UserError(f"the {self.role} side did not answer within {self.timeout_s:.0f} s; "
                            f"its log is {self.log_path} (raise --timeout for slow links)")
        if not answer[0]:
            raise UserError(f"the {self.role} side exited (code {self.proc.wait()}); its log is {self.log_path}")
        data = json.loads(answer[0])
        if "error" in data:
            raise UserError(f"{self.role} side: {data['error']}")
        return data

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self._to_side.write(json.dumps({"op": "quit"}) + "\n")
                self._to_side.close()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
        self._log.close()


def _env(settings: Settings) -> dict:
    env = dict(os.environ)
    set_transport_env(env, settings.transport)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _transport_problem(settings: Settings, evidence) -> str | None:
    """Moved bytes over another transport than the one asked for prove nothing about it."""
    if evidence.transport is None:
        return "cannot tell which transport the engine installed (no RDMA or TCP start-up line in its log)"
    if settings.transport == "rdma" and evidence.transport != "rdma":
        reason = fallback_reason(evidence, False, Path("/dev/infiniband").is_dir())  # rdma unsets MC_FORCE_TCP
        return f"RDMA was requested but Mooncake used {evidence.transport}: {reason}"
    return None


def run(settings: Settings, progress=print) -> dict:
    try:
        settings.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--out {settings.out}: cannot be created ({exc.strerror}); name a writable folder") from None
    prefill_gpu, decode_gpu = settings.gpus
    # The initiator issues the transfers: prefill when it pushes (write),
    # decode when it pulls (read). The receiving side is zeroed and checked.
    pushes = settings.direction == "write"
    init_gpu, target_gpu = (prefill_gpu, decode_gpu) if pushes else (decode_gpu, prefill_gpu)
    target = Side("target", target_gpu, not pushes, settings, _env(settings))
    initiator = None
    rows = [Row(n, b, layout=layout, blocks=-(-b // settings.layout_block_bytes(layout, b)))
            for n, b in settings.sizes for layout in settings.layouts]
    try:
        ready = target.ask()
        initiator = Side("initiator", init_gpu, pushes, settings, _env(settings))
        initiator.ask()
        receiver = target if pushes else initiator
        for row in rows:
            expected = pattern.digest(settings.seed, row.nbytes)
            for i in range(settings.repeats + 1):  # the first one warms the connection
                receiver.ask(op="zero")
                done = initiator.ask(op=settings.direction, bytes=row.nbytes,
                                     block_bytes=settings.layout_block_bytes(row.layout, row.nbytes),
                                     segment=ready["segment"], peer_addr=ready["addr"])
                got = receiver.ask(op="digest", bytes=row.nbytes)["digest"]
                if done["rc"] != 0:
                    row.failures.append(f"transfer {i} returned {done['rc']}")
                elif got != expected:
                    row.failures.append(f"transfer {i}: received bytes differ from the sent pattern")
                elif i > 0:
                    row.seconds.append(done["seconds"])
                    row.verified += 1
            progress(_line(row, settings))
    finally:
        for side in (initiator, target):
            if side is not None:
                side.close()
    logs = runfile.read_text(target.log_path, kind=runfile.LOG).splitlines()
    evidence = detect(logs, force_tcp=settings.transport == "tcp")
    result = {
        "memory": settings.memory, "direction": settings.direction,
        "gpus": {"prefill": prefill_gpu, "decode": decode_gpu},
        "transport_requested": settings.transport, "transport": evidence.transport,
        "block_bytes": settings.block_bytes, "repeats": settings.repeats,
        "rows": [{**asdict(r), "median_GB_s": r.median_GB_s} for r in rows],
        "ok": all(r.verified == settings.repeats and not r.failures for r in rows),
    }
    problem = _transport_problem(settings, evidence)
    result["transport_problem"] = problem
    # Written before any verdict, so what was measured is kept either way.
    write_json_atomic(settings.out / "result.json", result, indent=2)
    entries = ceiling_entries(rows)
    if entries:
        write_json_atomic(settings.out / engineceiling.FILE_NAME, entries, indent=2)
    if problem:
        raise UserError(f"{problem}; the figures are in {settings.out / 'result.json'}")
    return result


def ceiling_entries(rows: list[Row]) -> dict[str, dict]:
    """engine-ceiling.json as the report reads it (engineceiling.CeilingEntry under "<tokens>/<layout>", the
    recorded H200 run's shape names): only rows whose every timed transfer arrived intact."""
    out = {}
    for r in rows:
        if r.seconds and not r.failures and r.median_GB_s is not None:
            entry = engineceiling.CeilingEntry(bytes=r.nbytes, median_ms=statistics.median(r.seconds) * 1e3,
                                               min_ms=min(r.seconds) * 1e3, max_ms=max(r.seconds) * 1e3,
                                               GB_s=r.median_GB_s)
            out[f"{r.prompt_len}/{r.layout}"] = {**entry.model_dump(), "blocks": r.blocks, "verified": r.verified}
    return out


def _line(row: Row, settings: Settings) -> str:
    if row.seconds:
        ms = statistics.median(row.seconds) * 1e3
        speed = f"{ms:9.1f} ms  {row.median_GB_s:6.2f} GB/s"
    else:
        speed = f"{'-':>9}     {'-':>6}     "
    status = "ok" if not row.failures else "; ".join(row.failures[:2])
    layout = "" if settings.layouts == ("blocks",) else f"{row.layout:>6} x{row.blocks:<4} "
    return (f"{row.prompt_len:>7} tokens  {layout}{human_bytes(row.nbytes):>9}  {speed}  "
            f"verified {row.verified}/{settings.repeats}  {status}")
