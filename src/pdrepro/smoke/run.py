"""``pdrepro smoke`` on the host: bring the two-container stack up (smoke.stack), let the
agents move the KV-sized buffers, collect their JSON into a run folder, write
the shared summary/report/plots, and always tear the stack down.
"""

from __future__ import annotations

import os
import platform
import secrets
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from ..core import runfile, signals
from ..core.errors import UserError
from ..core.units import GB
from ..rundir import Provenance, RunDir
from ..rundir.contract import write_atomic
from ..scenario.smokeplan import SmokePlan
from . import summary as sm
from .console import print_result
from .stack import SmokeOptions, Stack, collect, containers, died, docker_client, wait_for_decode


def say(msg: str) -> None:
    print(f"smoke: {msg}", flush=True)


def check_rdma_request(transport: str, plan: SmokePlan, memlock: str | None, root: Path = Path("/")) -> None:
    """Fail before starting anything when RDMA cannot work here (``root`` is for tests)."""
    if transport != "rdma":
        return
    sysfs, dev = root / "sys" / "class" / "infiniband", root / "dev" / "infiniband"
    devices = sorted(p.name for p in sysfs.iterdir()) if sysfs.is_dir() else []
    if not devices or not dev.is_dir():
        raise UserError("RDMA was requested but this host has no RDMA device (/sys/class/infiniband is empty or "
                        "/dev/infiniband is missing); create a soft-RoCE one with `sudo scripts/softroce.sh up`, "
                        "or use --transport tcp")
    if memlock is not None and int(memlock) != -1 and int(memlock) < plan.max_bytes:
        raise UserError(f"memlock {memlock} B is below the {plan.max_bytes} B RDMA must pin per container; "
                        "raise SMOKE_MEMLOCK (bytes, -1 = unlimited; the Docker engine's own memlock limit must allow it) "
                        "or pass fewer --prompt-lens")


def new_run_dir(results: Path) -> tuple[str, RunDir]:
    run_id = datetime.now(timezone.utc).strftime("smoke-%Y%m%d-%H%M%S-") + secrets.token_hex(2)
    run = RunDir(results / run_id)
    run.raw_dir.mkdir(parents=True)
    run.logs_dir.mkdir()
    return run_id, run


def link_latest(results: Path, run_id: str) -> None:
    tmp = results / f".latest-{run_id}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(run_id)
    os.replace(tmp, results / "latest")


def image_info(client, image: str) -> dict:
    from docker.errors import ImageNotFound

    try:
        img = client.images.get(image)
    except ImageNotFound:
        raise UserError(f"no smoke image {image}; build it with `make smoke-image` (or `make smoke`)") from None
    return {"image": image, "image_id": img.id, "labels": img.labels or {}}


def provenance(opts: SmokeOptions, img: dict, run_id: str) -> dict:
    from ..core.pins import load_pins

    try:
        pins = load_pins()
    except (UserError, OSError):
        pins = {}
    return {
        "run_id": run_id,
        "kind": "smoke",
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "smoke_image": img["image"],
        "smoke_image_id": img["image_id"],
        "mooncake_wheel": img["labels"].get("org.pdrepro.mooncake.wheel"),
        "mooncake_commit": pins.get("MOONCAKE_COMMIT"),
        "backends": list(opts.backends),
        **({"nixl_version": img["labels"].get("org.pdrepro.nixl.version")} if "nixl" in opts.backends else {}),
        "requested_transport": opts.transport,
        "memlock_bytes": opts.memlock,
        "block_bytes": opts.plan.block_bytes,
        "repeats": opts.plan.repeats,
        "wait": opts.wait,
        "tcp_nodelay": opts.tcp_nodelay,
        "quickack": opts.quickack,
    }


def run_smoke(opts: SmokeOptions, write_outputs: Callable[[RunDir, dict], object]) -> int:
    """One smoke run; ``write_outputs`` is the smoke kind's writer (kinds.smoke), which draws its report and plots."""
    # A plain `kill` (CI timeouts, service managers) and a closed terminal tear down as Ctrl-C does, and a
    # second signal cannot cut the tear-down short; the CLI names the signal and exits 128 + its number.
    with signals.raise_on_signals():
        return _run_smoke(opts, write_outputs)


def _run_smoke(opts: SmokeOptions, write_outputs: Callable[[RunDir, dict], object]) -> int:
    check_rdma_request(opts.transport, opts.plan, opts.memlock)
    client = docker_client()
    img = image_info(client, opts.image)
    opts.results.mkdir(parents=True, exist_ok=True)
    run_id, run = new_run_dir(opts.results)
    write_atomic(run.scenario_file, opts.scenario.to_yaml(), run.root)
    prov = provenance(opts, img, run_id)
    run.write_provenance(Provenance(prov))
    project = f"pdsmoke-{run_id.replace('smoke-', '')}"
    stack = Stack(opts, run, project)
    say(f"run {run.root}; {len(opts.plan.rows)} sizes up to {opts.plan.max_bytes / GB:.3f} GB, "
        f"{opts.plan.repeats} transfers each, transport {opts.transport}, through {', '.join(opts.backends)} "
        "and a socket copy")
    started = time.monotonic()
    try:
        say(f"starting the stack ({opts.image}, project {project})")
        stack.up()
        code = wait_for_decode(client, project, opts.timeout_s)
        collect(client, project, run)
        if code != 0 and not run.agent_result("initiator").is_file():
            raise UserError(died("decode", code, containers(client, project).get("decode")))
    except BaseException:
        collect(client, project, run)
        raise
    finally:
        say("tearing the stack down")
        stack.down()
    initiator = runfile.read_json(run.agent_result("initiator"))
    summary = sm.build_summary(opts.scenario, initiator, prov)
    write_outputs(run, summary)
    link_latest(opts.results, run_id)
    print_result(summary, run, time.monotonic() - started)
    if initiator.get("error"):
        raise UserError(f"{initiator['error']} (partial results in {run.root})")
    return 0 if summary["smoke"]["all_verified"] else 1
