"""Container engine checks: Docker reachable and able to hand GPUs to containers."""

from __future__ import annotations

import shutil

from .base import FAIL, PASS, Check, Context, Facts

# What the NVIDIA container toolkit installs for `docker run --gpus` / compose device requests.
NVIDIA_HOOK = "nvidia-container-runtime-hook"


def check_docker(ctx: Context, f: Facts) -> list[Check]:
    try:
        import docker  # the SDK talks to DOCKER_HOST or the local socket
        client = docker.from_env(timeout=5)
        info = client.info()
    except Exception as exc:  # the SDK raises many kinds; all mean "not reachable"
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        return [Check("docker", FAIL, f"Docker engine not reachable: {reason}",
                      "install Docker Engine and start it (`systemctl start docker`); the user needs access to "
                      "/var/run/docker.sock (or set DOCKER_HOST)")]
    out = [Check("docker", PASS, f"Docker {info.get('ServerVersion', '?')}, {info.get('Containers', 0)} containers")]
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
