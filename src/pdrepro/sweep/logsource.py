"""Where the servers' logs come from: a folder the containers write into, or
the Docker engine running them. Either way they land in RUN/logs/, every
server's under its name by ``server_log_name`` (prefill.log, prefill-1.log, ...)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path

from ..core import runfile
from ..core.errors import UserError
from ..core.roles import SERVER_ROLES, Role
from ..host import docker as docker_engine
from ..parsers.serverstart import current_start
from ..rundir import RunDir, server_log_index, server_log_name
from ..rundir.contract import write_atomic
from .provenance import every_env_prefix

ROLES = SERVER_ROLES

# SGLang logs its arguments once per start; the compose files append every
# start to the same file, so a start marks where the current server's log begins.
def merge_into(dest: Path, text: str) -> None:
    """Keep earlier starts already copied into the run (a resumed sweep may span
    a server restart) and replace the latest start's part with ``text``'s."""
    segment = current_start(text)
    first = segment.split("\n", 1)[0]
    old = runfile.read_text(dest, kind=runfile.LOG) if dest.is_file() else ""
    if old and first and first in old:
        old = old[: old.index(first)]
    write_atomic(dest, old + segment)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and a.samefile(b)
    except OSError:
        return False


class LogSource(ABC):
    """Where the servers' logs are read from; what every source shares: copying each role's text into the run."""

    @abstractmethod
    def text(self, role: str) -> str | None:
        """The current log text of the role's first server, or None where this source has none."""

    @abstractmethod
    def describe(self) -> dict:
        """Where the logs come from, for the provenance and messages."""

    @abstractmethod
    def run_script(self, role: str, script: str) -> tuple[str | None, str]:
        """(what the shell script printed where the role's server runs, where that was), or (None, why not)."""

    @abstractmethod
    def containers(self) -> dict:
        """Facts about the servers' containers this source can see (image, environment), by role."""

    def texts(self, role: str) -> dict[int, str]:
        """Server index -> current log text, for every server of the role this source has."""
        text = self.text(role)
        return {} if text is None else {0: text}

    def origin(self, role: str, index: int) -> Path:
        """Where this source reads server ``index``'s log of ``role`` (for messages)."""
        return Path(server_log_name(role, index))

    def copy_to(self, run: RunDir, servers: dict[Role, int] | None = None) -> list[Path]:
        """Copies every server's log into the run; with ``servers`` (per role, the topology's), a log of a
        server past them is of another run (a shared folder keeps an earlier xPyD run's prefill-1.log): it is
        set aside (``set_aside``), never merged into this run's."""
        run.logs_dir.mkdir(parents=True, exist_ok=True)
        out: list[Path] = []
        self.set_aside: list[Path] = []
        for role in ROLES:
            for index, text in sorted(self.texts(role).items()):
                if servers is not None and role in servers and index >= servers[role]:
                    self.set_aside.append(self.origin(role, index))
                    continue
                dest = run.server_log(role, index)
                if not _same_file(self.origin(role, index), dest):
                    merge_into(dest, text)
                # else the server writes into the run itself (`pdrepro stack up`): rewriting the file would
                # swap its inode under the server, whose later lines would go to the unlinked one.
                out.append(dest)
        return out


class DirLogSource(LogSource):
    """A folder holding ``prefill.log`` and ``decode.log`` (the compose files
    mount one), e.g. an NFS share or a folder synced from the prefill node; with
    several servers of a role, also their ``prefill-1.log``, ``decode-1.log`` ..."""

    def __init__(self, folder: Path, names: dict[str, str] | None = None):
        self.folder = Path(folder)
        self.names = dict(names or {})
        if not self.folder.is_dir():
            raise UserError(f"--logs-from {folder}: no such folder; "
                            "give the folder the servers write prefill.log/decode.log into")

    def path(self, role: str) -> Path:
        return self.folder / server_log_name(role, 0)

    def origin(self, role: str, index: int) -> Path:
        return self.folder / server_log_name(role, index)

    def text(self, role: str) -> str | None:
        p = self.path(role)
        return runfile.read_text(p, kind=runfile.LOG) if p.is_file() else None

    def texts(self, role: str) -> dict[int, str]:
        found = {server_log_index(role, p.name): p for p in self.folder.iterdir() if p.is_file()}
        return {i: runfile.read_text(p, kind=runfile.LOG) for i, p in found.items() if i is not None}

    def describe(self) -> dict:
        return {"kind": "folder", "folder": str(self.folder)}

    def run_script(self, role: str, script: str) -> tuple[str | None, str]:
        return None, "the logs come from a folder, which gives no way onto the node"

    def containers(self) -> dict:
        """Facts of the named containers on this host, when its engine runs them."""
        if not self.names:
            return {}
        try:
            return DockerLogSource(self.names).containers()
        except Exception:  # no engine here: the folder is all there is
            return {}


class DockerLogSource(LogSource):
    """Containers by name, on this host's engine or on another node's through
    ``ssh://user@host`` (the prefill server runs on the other node)."""

    def __init__(self, names: dict[str, str], client=None, base_url: str | None = None):
        self.names = dict(names)
        self._client = client
        self.base_url = base_url

    @property
    def client(self):
        if self._client is None:
            try:
                self._client = docker_engine.connect(self.base_url, ping=False)
            except docker_engine.EngineUnreachable as exc:
                where = self.base_url or "this host"
                raise UserError(f"--logs-from docker: cannot reach the Docker engine on {where} ({exc.kind}); "
                                "start dockerd, check ssh access, or use --logs-from DIR") from None
        return self._client

    def _container(self, role: str):
        name = self.names.get(role)
        if not name:
            return None
        try:
            return self.client.containers.get(name)
        except Exception:
            return None

    def text(self, role: str) -> str | None:
        c = self._container(role)
        return c.logs().decode(errors="replace") if c is not None else None

    def describe(self) -> dict:
        return {"kind": "docker", "engine": self.base_url or "local", "containers": self.names}

    def run_script(self, role: str, script: str) -> tuple[str | None, str]:
        """What ``sh -c script`` prints inside the role's container, and where it ran."""
        c = self._container(role)
        where = f"container {self.names.get(role)} on {self.base_url or 'this host'}"
        if c is None:
            return None, f"{where}: not found"
        try:
            code, out = c.exec_run(["sh", "-c", script])
        except Exception as exc:  # stopped container, engine gone
            return None, f"{where}: exec failed ({type(exc).__name__})"
        if code != 0:
            return None, f"{where}: exited with status {code}"
        return (out or b"").decode(errors="replace"), where

    def containers(self) -> dict:
        """role -> container facts for provenance (image digest, environment)."""
        facts = {}
        for role in self.names:
            c = self._container(role)
            if c is None:
                continue
            attrs = c.attrs
            facts[role] = {
                "name": c.name,
                "image": attrs.get("Config", {}).get("Image"),
                "image_id": attrs.get("Image"),
                "env": [e for e in attrs.get("Config", {}).get("Env", []) or []
                        if e.split("=", 1)[0].startswith(every_env_prefix())],
                "node": node_facts(c),
            }
        return facts


# Run inside a server container: its node's kernel, GPU driver, CUDA and NIC
# firmware/rates (sysfs is the host's under host networking). The sweep runs on
# one node; this is how the other node's facts reach the provenance.
_NODE_SCRIPT = r"""
echo "kernel=$(uname -r)"
echo "hostname=$(hostname)"
if command -v nvidia-smi >/dev/null 2>&1; then
  echo "driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
  echo "cuda=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n 1)"
fi
for d in /sys/class/infiniband/*; do
  [ -e "$d" ] || continue
  echo "nic.${d##*/}.fw_ver=$(cat "$d/fw_ver" 2>/dev/null)"
  for p in "$d"/ports/*; do
    if [ -e "$p" ]; then echo "nic.${d##*/}.port.${p##*/}=$(cat "$p/rate" 2>/dev/null)"; fi
  done
done
"""


def node_facts(container) -> dict:
    """The facts _NODE_SCRIPT prints, from a running container; why not, otherwise."""
    try:
        code, out = container.exec_run(["sh", "-c", _NODE_SCRIPT])
    except Exception as exc:  # stopped container, engine gone: the rest of the record still counts
        return {"error": f"could not run in {getattr(container, 'name', 'the container')} ({type(exc).__name__})"}
    facts: dict = {"nics": {}}
    for line in (out or b"").decode(errors="replace").splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        if key.startswith("nic."):
            parts = key.split(".")
            nic = facts["nics"].setdefault(parts[1], {"ports": {}})
            if parts[2] == "fw_ver":
                nic["fw_ver"] = value or None
            elif parts[2] == "port" and len(parts) == 4:
                nic["ports"][parts[3]] = {"rate": value or None}
        else:
            facts[key] = value or None
    if code != 0:
        facts["exit_status"] = code
    return facts


class PerRoleLogSource(LogSource):
    """Each role's log from its own source (e.g. decode from the local folder,
    prefill from the prefill node's Docker engine)."""

    def __init__(self, sources: dict[str, LogSource]):
        self.sources = dict(sources)

    def text(self, role: str) -> str | None:
        source = self.sources.get(role)
        return source.text(role) if source is not None else None

    def texts(self, role: str) -> dict[int, str]:
        source = self.sources.get(role)
        return source.texts(role) if source is not None else {}

    def describe(self) -> dict:
        return {role: source.describe() for role, source in self.sources.items()}

    def run_script(self, role: str, script: str) -> tuple[str | None, str]:
        source = self.sources.get(role)
        if source is None:
            return None, f"no source for the {role} server"
        return source.run_script(role, script)

    def containers(self) -> dict:
        facts = {}
        for role, source in self.sources.items():
            found = source.containers()
            facts.update({r: f for r, f in found.items() if r not in facts})
            if role in found:
                facts[role] = found[role]  # a role's own source knows its container best
        return facts


def require_every_server(source, servers: dict[str, int]) -> None:
    """Refuse a source that cannot see every server of a role: a Docker engine reaches only its own host's
    containers, and the compose files give each role one container name, so a second server of a role
    is on another host. Analysing the first server's requests alone would pass for the whole run."""
    for role, count in servers.items():
        per_role = isinstance(source, PerRoleLogSource)
        own = source.sources.get(role) if per_role else source
        option = "--prefill-logs-from" if per_role and role == Role.PREFILL else "--logs-from"
        if count > 1 and isinstance(own, DockerLogSource):
            raise UserError(f"{option} docker: the topology runs {count} {role} servers, but a Docker engine reaches "
                            f"only one {role} container, on its own host; use --logs-from DIR with the shared folder "
                            f"every server writes its log into ({role}.log, {role}-1.log, ...)")


def from_spec(spec: str, names: dict[str, str]):
    """``DIR``, ``docker`` (local engine) or ``docker:ssh://user@host``."""
    if spec == "docker":
        return DockerLogSource(names)
    if spec.startswith("docker:"):
        return DockerLogSource(names, base_url=spec[len("docker:"):])
    return DirLogSource(Path(spec), names)


def tail(source, role: str, n: int = 5) -> list[str]:
    if source is None:
        return []
    text = source.text(role)
    return text.splitlines()[-n:] if text else []
