"""Container engine checks: Docker reachable and able to hand GPUs to containers."""

from __future__ import annotations

import shutil

from ...host import docker as docker_engine
from .base import FAIL, PASS, Check, Context, Facts

# What the NVIDIA container toolkit installs for `docker run --gpus` / compose device requests.
NVIDIA_HOOK = "nvidia-container-runtime-hook"
# The GPU stacks' healthchecks set start_interval (probe often while the model
# loads, rarely after), which needs Engine API 1.44: compose refuses to create
# such a container on an older engine. The smoke stack has no healthcheck, so
# any engine with compose v2 runs it (Debian 12's docker.io 20.10 does).
GPU_STACK_MIN_ENGINE = 25


def engine_major(version: str) -> int | None:
    """The leading number of a server version such as "20.10.24+dfsg1" or "28.2.2"; None if unreadable."""
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def check_docker(ctx: Context, f: Facts) -> list[Check]:
    reason: str | None
    try:
        info = docker_engine.connect(timeout=5, ping=False).info()
    except docker_engine.EngineUnreachable as exc:
        reason = str(exc)
    except Exception as exc:  # the SDK raises many kinds; all mean "not reachable"
        reason = docker_engine.first_line(exc)
    else:
        reason = None
    if reason is not None:
        return [Check("docker", FAIL, f"Docker engine not reachable: {reason}",
                      "install Docker Engine and start it (`systemctl start docker`); the user needs access to "
                      "/var/run/docker.sock (or set DOCKER_HOST)")]
    version = str(info.get("ServerVersion", "?"))
    detail = f"Docker {version}, {info.get('Containers', 0)} containers"
    major = engine_major(version)
    gpu_host = bool(ctx.role or f.gpus)
    if major is not None and major < GPU_STACK_MIN_ENGINE:
        why = (f"; the GPU stacks need Engine {GPU_STACK_MIN_ENGINE} or later (their healthchecks' start_interval; "
               "compose refuses it on older engines)")
        fix = (f"install Docker Engine {GPU_STACK_MIN_ENGINE}+ (Docker's docker-ce packages); "
               "the distribution's docker.io is enough for `make smoke` only")
        out = [Check("docker", ctx.need if gpu_host else PASS,
                     detail + why + ("" if gpu_host else "; enough for the smoke"), fix if gpu_host else "")]
    else:
        out = [Check("docker", PASS, detail)]
    runtimes = sorted((info.get("Runtimes") or {}).keys())
    # The compose files ask for GPUs as device requests (driver: nvidia), which
    # the engine serves through the toolkit's prestart hook; a registered
    # `nvidia` runtime is the other way to get them.
    hook = shutil.which(NVIDIA_HOOK)
    if "nvidia" in runtimes:
        out.append(Check("nvidia-runtime", PASS, f"runtimes: {', '.join(runtimes)}"))
    elif hook:
        out.append(Check("nvidia-runtime", PASS, f"{hook} present: the engine serves GPU device requests "
                         f"(runtimes: {', '.join(runtimes)})"))
    else:
        out.append(Check("nvidia-runtime", ctx.need if (ctx.role or f.gpus) else PASS,
                         f"no nvidia runtime (runtimes: {', '.join(runtimes) or 'none'}) and no {NVIDIA_HOOK}"
                         + ("" if (ctx.role or f.gpus) else "; not needed without GPUs"),
                         "install nvidia-container-toolkit, then `nvidia-ctk runtime configure --runtime=docker` "
                         "and restart dockerd" if (ctx.role or f.gpus) else ""))
    return out
