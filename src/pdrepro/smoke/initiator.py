"""The decode side of the smoke: pulls every KV size both ways and records it.

It asks the target where its buffer is, reads each KV-sized prefix through the
engine, through NIXL when asked for (``nixlpath``) and through the socket
(``measure``), and writes the timings as JSON after every size, so what was
measured survives a later failure.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request

from ..core.errors import UserError
from ..parsers.mooncake_log import TransportEvidence
from ..scenario.smokeplan import MIN_BLOCK_BYTES, digest, expected_digests, pattern
from .engine import require_transport, start_engine
from .measure import measure_interleaved, mooncake_read, socket_read
from .memory import Buffer, memlock_limit, memory_peak, require_memlock
from .nixlpath import NixlSide, require_tcp
from .output import say, write_json
from .settings import Settings, my_ip

ROLE = "decode"


def log(msg: str) -> None:
    say(ROLE, msg)


def fetch_info(settings: Settings) -> dict:
    url = f"http://{settings.peer}:{settings.control_port}/"
    deadline = time.monotonic() + settings.timeout_s
    last = 0.0
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                return json.loads(resp.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            if time.monotonic() > deadline:
                raise UserError(f"the prefill side at {url} did not come up within {settings.timeout_s:.0f} s ({exc})") from None
            if time.monotonic() - last > 5:
                log(f"waiting for the prefill side at {url}")
                last = time.monotonic()
            time.sleep(0.3)


def finish_target(settings: Settings) -> dict:
    req = urllib.request.Request(f"http://{settings.peer}:{settings.control_port}/done", data=b"{}", method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())
    except (urllib.error.URLError, OSError, ValueError):
        return {}


def connect_nixl(settings: Settings, info: dict, local: Buffer, result: dict) -> tuple[NixlSide, str]:
    """Join the target's NIXL agent and time the first transfer apart: it carries UCX's connection
    set-up (seconds on a small VM), which would otherwise hide in the first size's warm-up."""
    remote = info.get("nixl")
    if not isinstance(remote, dict) or not isinstance(remote.get("metadata"), str):
        raise UserError("the prefill side offers no NIXL agent; start both sides with the same SMOKE_BACKENDS")
    side = NixlSide(ROLE, local, settings.results / f"ucx-{ROLE}.log")
    t0 = time.perf_counter()
    peer = side.add_peer(remote["metadata"])
    loaded = time.perf_counter() - t0
    # Small, so that its time is the set-up rather than the bytes.
    n = min(MIN_BLOCK_BYTES, settings.plan.max_bytes)
    local.zero(n)
    first = side.read(peer, int(remote["addr"]), n, settings.plan.block_bytes, settings.wait, settings.timeout_s)
    verified = digest(local.view[:n]) == digest(pattern(settings.plan.seed, n))
    result["nixl_setup"] = {"metadata_load_s": loaded, "first_transfer_s": first, "first_transfer_bytes": n,
                            "first_transfer_verified": verified}
    proof = side.transport(ROLE)
    result["nixl_transport"] = proof.to_dict()
    result["nixl_transport"]["lines"] = proof.evidence
    log(f"NIXL: peer {peer}; first transfer ({n} B, connection set-up included) {first:.2f} s, verified "
        f"{verified}; {proof.describe()}")
    require_tcp(proof)
    if not verified:
        raise UserError(f"NIXL's first transfer ({n} B) delivered bytes that differ from the prefill side's")
    return side, peer


def run_initiator(settings: Settings) -> int:
    plan = settings.plan
    out = settings.results / "initiator.json"
    info = fetch_info(settings)
    if info["nbytes"] < plan.max_bytes:
        raise UserError(f"the prefill side holds {info['nbytes']} B but the plan needs {plan.max_bytes} B; restart both sides")
    log(f"prefill side at {info['segment']}; computing expected digests")
    want = expected_digests(plan)
    local = Buffer(plan.max_bytes)
    engine, evidence = start_engine(settings, my_ip(settings))
    result = {"role": "initiator", "requested_transport": settings.transport, "wait": settings.wait,
              "backends": list(settings.backends),
              "evidence": evidence.to_dict(),
              "target_evidence": info["evidence"], "plan": json.loads(plan.to_json()),
              "memlock_bytes": memlock_limit(), "rows": [], "error": None}
    try:
        require_transport(settings, evidence)
        require_transport(settings, TransportEvidence.from_dict(info["evidence"]))
        require_memlock(evidence.transport, plan.max_bytes)
        if engine.register_memory(local.addr, local.nbytes) != 0:
            raise UserError(f"registering {local.nbytes} B with the engine failed; if it is RDMA, raise SMOKE_MEMLOCK")
        log(f"transport {evidence.transport}; {len(plan.rows)} sizes x {plan.repeats} transfers each, "
            f"blocks of {plan.block_bytes} B, waiting by {settings.wait}")
        nixl = connect_nixl(settings, info, local, result) if "nixl" in settings.backends else None
        peer_ip = info["segment"].rsplit(":", 1)[0]
        with socket.create_connection((peer_ip, info["data_port"]), timeout=settings.timeout_s) as conn:
            for row in plan.rows:
                n = row.kv_bytes
                # n bound now: the reads are called within this iteration, and stay correct if ever kept.
                ways = {"mooncake": lambda n=n: mooncake_read(engine, info["segment"], local, info["addr"], n,
                                                              plan.block_bytes, settings.wait)}
                if nixl is not None:
                    ways["nixl"] = lambda n=n: nixl[0].read(nixl[1], int(info["nixl"]["addr"]), n, plan.block_bytes,
                                                            settings.wait, settings.timeout_s)
                ways["socket"] = lambda n=n: socket_read(conn, local, n)
                got = measure_interleaved(n, plan.repeats, local, want[row.prompt_len], ways)
                result["rows"].append({"prompt_len": row.prompt_len, "kv_bytes": n, **got})
                write_json(out, result)
                log(f"{row.prompt_len:>6} tokens {n:>11} B: " + ", ".join(
                    f"{k} {m['ms_median']:8.2f} ms ({n / m['ms_median'] / 1e6:6.2f} GB/s)" for k, m in got.items())
                    + f", verified {all(m['verified'] for m in got.values())}")
    except (UserError, RuntimeError) as exc:
        result["error"] = str(exc)
        raise
    finally:
        done = finish_target(settings)
        result["target_memory_peak"] = done.get("memory_peak")
        if "nixl" in settings.backends:
            result["target_nixl_transport"] = done.get("nixl_transport")
        result["memory_peak"] = memory_peak()
        write_json(out, result)
    return 0
