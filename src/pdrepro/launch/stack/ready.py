"""When a started process counts as up: it answers its health URL, the listening socket of its port
belongs to this stack (the child the launcher spawned or a process carrying its marker), and a server's
/get_server_info names the model and port it was given. A health answer alone could come from anything
that holds the port: another stack, a server left from an earlier run."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass

from . import ownership

# /get_server_info is SGLang's server arguments and some state: a few kB. More is not a server's answer.
MAX_INFO_BYTES = 1 << 20


def answers(url: str, timeout: float = 5.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def server_info(url: str, timeout: float = 5.0) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            data = json.loads(resp.read(MAX_INFO_BYTES + 1)[:MAX_INFO_BYTES])
    except (urllib.error.URLError, OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def flag(argv: tuple[str, ...], name: str) -> str | None:
    """The value after ``name`` in ``argv``, or None."""
    try:
        return argv[argv.index(name) + 1]
    except (ValueError, IndexError):
        return None


@dataclass(frozen=True)
class Check:
    up: bool
    final: bool = False     # a failure that waiting will not cure
    why: str = ""


def holders(port: int, stack_id: str) -> list[int]:
    """This stack's processes that hold ``port``'s listening socket."""
    return ownership.port_holders(port, ownership.marked(stack_id))


def foreign_holders(port: int, stack_id: str) -> str:
    """Words naming who else holds ``port``, for a message ('' when no one visible does)."""
    inodes = ownership.listening_inodes(port)
    if not inodes:
        return ""
    mine = set(ownership.marked(stack_id))
    others = [pid for pid in ownership.pids() if pid not in mine and inodes & ownership.socket_inodes(pid)]
    if others:
        return f"; port {port} is held by pid {', '.join(map(str, others))}, not a process of this stack"
    return f"; port {port} is held by a process of another user, not one of this stack"


def check(health_url: str, info_url: str | None, argv: tuple[str, ...], port: int, stack_id: str) -> Check:
    """Whether the process started with ``argv`` is up on ``port`` now."""
    if not answers(health_url):
        return Check(False, why=f"does not answer {health_url}")
    if not holders(port, stack_id):
        return Check(False, why=f"answers {health_url}, but not from this stack" + foreign_holders(port, stack_id))
    if info_url is None:
        return Check(True)
    info = server_info(info_url)
    model, given = flag(argv, "--model-path"), {"model_path": flag(argv, "--model-path"), "port": port}
    if info is None:
        return Check(False, why=f"gives no JSON object at {info_url}")
    told = {"model_path": info.get("model_path"), "port": info.get("port")}
    if str(told["model_path"]) != str(model) or str(told["port"]) != str(port):
        return Check(False, final=True, why=f"says at {info_url} it serves model {told['model_path']!r} on port "
                                            f"{told['port']!r}; it was given {given['model_path']!r} on port {port}")
    return Check(True)
