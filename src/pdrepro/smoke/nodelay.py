"""The ``--tcp-nodelay`` experiment: both agents run with Nagle's algorithm off.

Mooncake's TCP transport at the pinned commit never sets TCP_NODELAY. The smoke
runs it as shipped by default; this switch builds ``nodelay.c`` on the host (a
preloaded library that sets the option on every TCP socket the agents connect
or accept) and mounts it into both containers, so a run with and one without
it tell whether a stall is Nagle's algorithm waiting for a delayed ACK.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ..core.errors import UserError
from ..host.tools import ToolFailed, capture

SOURCE = Path(__file__).with_name("nodelay.c")
# Where compose/smoke.nodelay.yaml mounts the folder holding the library.
MOUNT = "/opt/pdrepro-nodelay"
LIBRARY = "nodelay.so"


def build(out_dir: Path) -> Path:
    """Compile the preload library into ``out_dir``; the containers' glibc (Debian 12) loads what a
    host's gcc makes, as the library uses only calls every glibc since 2.34 has."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise UserError("--tcp-nodelay builds a small preload library on this host and needs a C compiler: "
                        "`apt-get install gcc` (or leave --tcp-nodelay off)")
    out_dir.mkdir(parents=True, exist_ok=True)
    lib = out_dir / LIBRARY
    # A compiler that has not finished one small file in five minutes is stuck.
    try:
        proc = capture([cc, "-shared", "-fPIC", "-O2", "-o", str(lib), str(SOURCE), "-ldl"], timeout=300)
    except ToolFailed as exc:
        raise UserError(f"building {SOURCE.name} for --tcp-nodelay failed: {exc}") from None
    if proc.returncode != 0:
        raise UserError(f"building {SOURCE.name} for --tcp-nodelay failed: {proc.stderr.strip()[-400:]}")
    return lib


def compose_env(lib: Path) -> dict[str, str]:
    """What compose/smoke.nodelay.yaml reads."""
    return {"SMOKE_NODELAY_DIR": str(lib.parent.resolve()), "SMOKE_NODELAY_PRELOAD": f"{MOUNT}/{lib.name}"}
