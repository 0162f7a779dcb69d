"""What the servers will import, asked of the Python they run with, in the environment they get."""

from __future__ import annotations

import json
from dataclasses import dataclass

from ...backends import TransferBackend
from ...core.errors import UserError
from ...engines import ServingEngine
from ...host.tools import ToolFailed, ToolMissing, capture

# Besides the engine's and the backend's own: the framework every server runs on.
FRAMEWORK = ("torch",)


def wanted(engine: ServingEngine, backend: TransferBackend) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the modules the servers import, the distributions provenance names) for this engine and backend."""
    return (*engine.modules, *backend.modules), (*engine.distributions, *backend.distributions, *FRAMEWORK)


_PROBE = """
import importlib.metadata, importlib.util, json, sys
wanted = json.loads(sys.argv[1])
modules, broken = {}, {}
for name in wanted["modules"]:
    try:
        spec = importlib.util.find_spec(name)
        if spec is not None:
            importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (name == exc.name or name.startswith(exc.name + ".")):
            broken[name] = "ModuleNotFoundError: " + str(exc)[:300]  # found, but one of its own imports is not
        spec = None  # else: the module or its package is not there, simply missing
    except Exception as exc:  # installed, but importing it (or its package) fails: its own cause is the news
        broken[name] = (type(exc).__name__ + ": " + str(exc).splitlines()[0] if str(exc) else type(exc).__name__)[:300]
        spec = None
    modules[name] = None if spec is None else (spec.origin or "namespace")
versions = {}
for name in wanted["distributions"]:
    try:
        versions[name] = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        versions[name] = None
print(json.dumps({"python_version": sys.version.split()[0], "modules": modules, "broken": broken,
                  "versions": versions}))
"""


@dataclass(frozen=True)
class Installed:
    python_version: str
    modules: dict[str, str]
    versions: dict[str, str | None]

    def line(self) -> str:
        # The probe answers in the order it was asked: the engine's, the backend's, the framework's.
        shown = [f"{name} {version}" for name, version in self.versions.items() if version]
        return f"Python {self.python_version}: " + (", ".join(shown) or "none of the stack's distributions")


def probe(python: str, env: dict[str, str], engine: ServingEngine, backend: TransferBackend) -> Installed:
    """The modules the stack needs, or one line naming what is missing and the fix."""
    modules, distributions = wanted(engine, backend)
    asked = json.dumps({"modules": modules, "distributions": distributions})
    try:
        proc = capture([python, "-c", _PROBE, asked], timeout=300, env=env)
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (OSError, ToolMissing, ToolFailed, ValueError, IndexError):
        raise UserError(f"{python}: cannot ask this Python which packages it has; run pdrepro with a working Python") from None
    try:
        broken = {name: str(cause) for name, cause in data.get("broken", {}).items() if name in modules}
        missing = [name for name in modules if data["modules"][name] is None and name not in broken]
        installed = Installed(str(data["python_version"]), dict(data["modules"]),
                              {name: data["versions"][name] for name in distributions})
    except (KeyError, TypeError, AttributeError):
        raise UserError(f"{python}: its answer to the package probe is not the probe's; run pdrepro with a working "
                        "Python") from None
    if broken:
        # Installed but failing on import (a shared library, a dependency of the package): "install it" would be
        # wrong advice, the cause is what to fix.
        name, cause = next(iter(broken.items()))
        more = f" (and {', '.join(list(broken)[1:])})" if len(broken) > 1 else ""
        raise UserError(f"the Python running pdrepro ({python}) has {name} but importing it fails: {cause}{more}; "
                        f"fix that in its environment (the servers would die on the same import)")
    if missing:
        raise UserError(f"the Python running pdrepro ({python}) cannot import {', '.join(missing)}; install "
                        f"{engine.label} (server and router) and {backend.label} into it (`make gpu-venv`, then run "
                        "that venv's pdrepro)")
    return installed
