"""The decode side of the smoke: pulls every KV size both ways and records it.

It asks the target where its buffer is, reads each KV-sized prefix through the
engine and through the socket (``measure``), and writes the timings as JSON
after every size, so what was measured survives a later failure.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request

from ..core.errors import UserError
from ..parsers.mooncake_log import TransportEvidence
from .engine import require_transport, start_engine
from .measure import measure_interleaved, mooncake_read, socket_read
from .memory import Buffer, memlock_limit, memory_peak, require_memlock
from .output import say, write_json
from .plan import expected_digests
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
        peer_ip = info["segment"].rsplit(":", 1)[0]
        with socket.create_connection((peer_ip, info["data_port"]), timeout=settings.timeout_s) as conn:
            for row in plan.rows:
                n = row.kv_bytes
                both = measure_interleaved(n, plan.repeats, local, want[row.prompt_len], {
                    # n bound now: the reads are called within this iteration, and stay correct if ever kept.
                    "mooncake": lambda n=n: mooncake_read(engine, info["segment"], local, info["addr"], n,
                                                          plan.block_bytes, settings.wait),
                    "socket": lambda n=n: socket_read(conn, local, n),
                })
                mc, sk = both["mooncake"], both["socket"]
                result["rows"].append({"prompt_len": row.prompt_len, "kv_bytes": n, "mooncake": mc, "socket": sk})
                write_json(out, result)
                log(f"{row.prompt_len:>6} tokens {n:>11} B: mooncake {mc['ms_median']:8.2f} ms "
                    f"({n / mc['ms_median'] / 1e6:6.2f} GB/s), socket {sk['ms_median']:8.2f} ms "
                    f"({n / sk['ms_median'] / 1e6:6.2f} GB/s), verified {mc['verified'] and sk['verified']}")
    except (UserError, RuntimeError) as exc:
        result["error"] = str(exc)
        raise
    finally:
        done = finish_target(settings)
        result["target_memory_peak"] = done.get("memory_peak")
        result["memory_peak"] = memory_peak()
        write_json(out, result)
    return 0
