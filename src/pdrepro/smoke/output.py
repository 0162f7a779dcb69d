"""What an agent leaves behind: progress lines the host echoes, and JSON results.

The host (``smoke/stack.py``) picks the agents' lines out of the engine's glog
chatter by their ``[smoke ROLE]`` prefix, and an error by ``[smoke ROLE] error:``.
"""

from __future__ import annotations

from pathlib import Path

from ..rundir.contract import write_json_atomic


def say(role: str, msg: str) -> None:
    print(f"[smoke {role}] {msg}", flush=True)


def write_json(path: Path, data: dict) -> None:
    write_json_atomic(path, data, indent=2)
