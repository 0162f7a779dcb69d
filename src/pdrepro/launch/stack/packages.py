"""What the servers will import, asked of the Python they run with, in the environment they get."""

from __future__ import annotations

import json
from dataclasses import dataclass

from ...core.errors import UserError
from ...host.tools import ToolFailed, ToolMissing, capture

MODULES = ("sglang.launch_server", "sglang_router.launch_router", "mooncake.engine")
# The Mooncake engine comes as one of these (or a build of the pin, which names itself the first).
MOONCAKE_DISTRIBUTIONS = ("mooncake-transfer-engine", "mooncake-transfer-engine-cuda13", "mooncake-transfer-engine-non-cuda")
DISTRIBUTIONS = ("sglang", "sglang-router", *MOONCAKE_DISTRIBUTIONS, "torch")

_PROBE = """
import importlib.metadata, importlib.util, json, sys
wanted = json.loads(sys.argv[1])
modules = {}
for name in wanted["modules"]:
    try:
        spec = importlib.util.find_spec(name)
    except Exception:  # the parent package fails to import: as good as missing
        spec = None
    modules[name] = None if spec is None else (spec.origin or "namespace")
versions = {}
for name in wanted["distributions"]:
    try:
        versions[name] = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        versions[name] = None
print(json.dumps({"python_version": sys.version.split()[0], "modules": modules, "versions": versions}))
"""


@dataclass(frozen=True)
class Installed:
    python_version: str
    modules: dict[str, str]
    versions: dict[str, str | None]

    def line(self) -> str:
        shown = [f"{name} {self.versions[name]}" for name in DISTRIBUTIONS if self.versions.get(name)]
        return f"Python {self.python_version}: " + (", ".join(shown) or "no sglang/router/mooncake distributions")


def probe(python: str, env: dict[str, str]) -> Installed:
    """The modules the stack needs, or one line naming what is missing and the fix."""
    wanted = json.dumps({"modules": MODULES, "distributions": DISTRIBUTIONS})
    try:
        proc = capture([python, "-c", _PROBE, wanted], timeout=300, env=env)
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (OSError, ToolMissing, ToolFailed, ValueError, IndexError):
        raise UserError(f"{python}: cannot ask this Python which packages it has; run pdrepro with a working Python") from None
    missing = [name for name in MODULES if data["modules"][name] is None]
    if missing:
        raise UserError(f"the Python running pdrepro ({python}) cannot import {', '.join(missing)}; install SGLang, the "
                        "router and the Mooncake engine into it (`make gpu-venv`, then run that venv's pdrepro)")
    return Installed(data["python_version"], data["modules"], data["versions"])
