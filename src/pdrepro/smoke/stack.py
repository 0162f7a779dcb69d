"""The smoke's two-container compose stack on the host: reach the Docker engine and Compose, start the
prefill and decode agents' containers with the run's settings, follow the decode agent until it is done, say
why a container died, keep their logs, and take the stack down. ``smoke.run`` drives it for one run."""

from __future__ import annotations

import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import UserError
from ..host import docker as docker_engine
from ..host.tools import Finished, ToolMissing, ToolTimeout, capture
from ..rundir import RunDir
from ..rundir.contract import write_atomic
from ..scenario.model import Scenario
from ..scenario.smokeplan import SmokePlan
from . import nodelay

TAIL_LINES = 30


@dataclass(frozen=True)
class SmokeOptions:
    scenario: Scenario
    plan: SmokePlan
    image: str
    transport: str                 # auto | tcp | rdma
    results: Path
    compose_file: Path
    memlock: str | None            # bytes, or -1 for unlimited; None = compose default
    timeout_s: float
    host_ip: str | None = None
    wait: str = "sleep"
    tcp_nodelay: bool = False      # the experiment of smoke.nodelay
    quickack: bool = False         # the other half: delayed ACKs off (compose/smoke.quickack.yaml)
    backends: tuple[str, ...] = ("mooncake",)   # transfer engines besides the socket copy (settings.BACKENDS)


def docker_client():
    try:
        return docker_engine.connect()
    except docker_engine.EngineUnreachable as exc:
        if exc.sdk_missing:
            raise UserError("the Docker SDK for Python is missing; `pip install docker` (or `make setup`)") from None
        raise UserError(
            f"cannot reach a Docker engine ({docker_engine.first_line(exc.cause, 160)}); install Docker "
            "(Debian/Ubuntu: `bash .ci/docker-engine.sh` installs engine, compose v2 and debootstrap) and start it "
            "(the script does; else `systemctl start docker`, or `dockerd &`)"
        ) from None


def compose_command() -> list[str]:
    for cmd in (["docker", "compose"], ["docker-compose"]):
        try:
            if capture([*cmd, "version"], timeout=60).returncode == 0:
                return cmd
        except (ToolMissing, ToolTimeout):
            continue
    raise UserError("Docker Compose v2 is missing; install the `docker-compose-plugin` (or `docker-compose`) package "
                    "(Debian/Ubuntu: `bash .ci/docker-engine.sh`)")


def find_compose_file(explicit: str | None) -> Path:
    if explicit:
        path = Path(explicit)
    else:
        here = Path(__file__).resolve()
        candidates = [Path.cwd() / "compose" / "smoke.yaml", here.parents[3] / "compose" / "smoke.yaml"]
        path = next((p for p in candidates if p.is_file()), candidates[0])
    if not path.is_file():
        raise UserError(f"{path}: no such compose file; run from the bundle's checkout or pass --compose-file")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def host_address() -> str:
    """This host's address by its name: where the host-network agents reach each other."""
    name = socket.gethostname()
    try:
        return socket.gethostbyname(name)
    except OSError:
        raise UserError(f"this host's name {name!r} does not resolve to an address; set SMOKE_HOST_IP (or "
                        "--host-ip) to the address on the RDMA netdev") from None


class Stack:
    """One compose project; ``down`` is safe to call at any point, twice."""

    def __init__(self, opts: SmokeOptions, run: RunDir, project: str) -> None:
        self.opts, self.run, self.project = opts, run, project
        self.compose = compose_command()
        files = [opts.compose_file]
        env = {**os.environ, "SMOKE_IMAGE": opts.image, "SMOKE_PLAN": opts.plan.to_json(),
               "SMOKE_TRANSPORT": opts.transport, "SMOKE_RUN_DIR": str(run.root.resolve()),
               "SMOKE_TIMEOUT_S": str(int(opts.timeout_s)), "SMOKE_WAIT": opts.wait,
               "SMOKE_BACKENDS": ",".join(opts.backends)}
        has_ib = Path("/dev/infiniband").is_dir()
        if has_ib:
            env["SMOKE_IB_DEVICE"] = "/dev/infiniband"
        if opts.memlock is not None:
            env["SMOKE_MEMLOCK"] = str(opts.memlock)
        # Wherever the engine may pick RDMA, the containers need the host's RoCE GIDs.
        if opts.transport == "rdma" or (opts.transport == "auto" and has_ib):
            files.append(opts.compose_file.with_name("smoke.host-net.yaml"))
            ip = opts.host_ip or host_address()
            env.update(SMOKE_HOST_IP=ip, SMOKE_PEER=ip, SMOKE_CONTROL_PORT=str(free_port()),
                       SMOKE_DATA_PORT=str(free_port()))
        if opts.quickack:
            if any(f.name == "smoke.host-net.yaml" for f in files):
                raise UserError("--quickack changes the containers' own route, and on the host network that is the "
                                "host's: use it over the bridge (--transport tcp on a host without /dev/infiniband)")
            files.append(opts.compose_file.with_name("smoke.quickack.yaml"))
        if opts.tcp_nodelay:
            files.append(opts.compose_file.with_name("smoke.nodelay.yaml"))
            env.update(nodelay.compose_env(nodelay.build(run.root / "nodelay")))
        self.env = env
        self.base = [*self.compose, "-p", project, *sum((["-f", str(f)] for f in files), [])]

    def _compose(self, *args: str, check: bool = True) -> Finished:
        proc = capture([*self.base, *args], timeout=None, env=self.env)
        if check and proc.returncode != 0:
            raise UserError(f"`docker compose {' '.join(args)}` failed: {proc.stderr.strip()[-600:]}")
        return proc

    def up(self) -> None:
        self._compose("up", "-d", "--no-build", "--pull", "never")

    def down(self) -> None:
        self._compose("down", "--volumes", "--remove-orphans", "--timeout", "3", check=False)


def containers(client, project: str) -> dict:
    found = client.containers.list(all=True, filters={"label": f"com.docker.compose.project={project}"})
    return {c.labels.get("com.docker.compose.service"): c for c in found}


def _tail(container, n: int = TAIL_LINES) -> str:
    try:
        return container.logs(tail=n).decode(errors="replace").rstrip()
    except Exception:  # noqa: BLE001 - the container may be gone already
        return "(no log)"


def died(role: str, code: int, container, when: str = "") -> str:
    """Why a container stopped: the agent's own error line first (the engine's
    log lines around it would bury it), then its last lines for context."""
    tail = _tail(container) if container is not None else "(gone)"
    marker = f"[smoke {role}] error: "
    reasons = [line.split(marker, 1)[1] for line in tail.splitlines() if marker in line]
    head = f"the {role} container died (exit {code}){when}"
    if reasons:
        head += f": {reasons[-1]}"
    return f"{head}\nits last lines:\n{tail}"


def _follow(container, stop: threading.Event) -> None:
    """Echo the agent's own progress lines, not the engine's glog chatter."""
    try:
        for raw in container.logs(stream=True, follow=True):
            for line in raw.decode(errors="replace").splitlines():
                if line.startswith("[smoke"):
                    print(f"  {line}", flush=True)
            if stop.is_set():
                return
    except Exception:  # noqa: BLE001 - streaming ends when the container goes
        return


def wait_for_decode(client, project: str, timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    stop = threading.Event()
    followed = False
    try:
        while True:
            cs = containers(client, project)
            decode, prefill = cs.get("decode"), cs.get("prefill")
            if decode is None or prefill is None:
                raise UserError(f"the smoke stack has no {'decode' if decode is None else 'prefill'} container; "
                                "see `docker compose -f compose/smoke.yaml config`")
            if not followed:
                threading.Thread(target=_follow, args=(decode, stop), daemon=True).start()
                followed = True
            decode.reload()
            prefill.reload()
            if decode.status == "exited":
                return decode.attrs["State"]["ExitCode"]
            # The prefill agent exits 0 only once the decode side told it that it is done, which can be
            # seen before the decode container itself has exited: that is the end, not a death.
            if prefill.status == "exited" and prefill.attrs["State"]["ExitCode"] != 0:
                code = prefill.attrs["State"]["ExitCode"]
                raise UserError(died("prefill", code, prefill, " before the transfers finished"))
            if time.monotonic() > deadline:
                raise UserError(f"the smoke did not finish within {timeout_s:.0f} s; raise --timeout or pass fewer "
                                f"--prompt-lens. Last decode lines:\n{_tail(decode)}")
            time.sleep(0.5)
    finally:
        stop.set()


def collect(client, project: str, run: RunDir) -> None:
    for name, c in containers(client, project).items():
        try:
            write_atomic(run.role_log(name), c.logs(), run.root)
        except Exception:  # noqa: BLE001 - keep going: logs are a courtesy
            pass
