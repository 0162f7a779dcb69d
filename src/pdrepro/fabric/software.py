"""What the servers of this node will run, for its record: the image (compose) or a Python's packages (host).

Under compose both nodes must run the same image, so its content digest (the image ID on this node's engine)
is what the pair check compares, with the SGLang and Mooncake commits the bundle's GPU image carries as labels
and the CUDA major of its base. Under the host launcher the servers import what a Python on the node has: the
versions of sglang and the Mooncake transfer engine, and the CUDA flavour of the wheels (the Mooncake
distribution's name, else torch's local version). Whatever cannot be read stays None.
"""

from __future__ import annotations

import json
import re
from typing import Literal

from ..host import docker
from ..host.tools import ToolFailed, ToolMissing, capture
from ..rundir.noderecord import Software

MOONCAKE_DISTRIBUTIONS = ("mooncake-transfer-engine", "mooncake-transfer-engine-cuda13",
                          "mooncake-transfer-engine-non-cuda")
_SGLANG_LABEL = "org.pdrepro.sglang.commit"
_MOONCAKE_LABEL = "org.pdrepro.mooncake.commit"
_BASE_LABEL = "org.opencontainers.image.base.name"

_PROBE = """
import importlib.metadata as m, json, sys
found = {}
for name in json.loads(sys.argv[1]):
    try:
        found[name] = m.version(name)
    except Exception:
        found[name] = None
print(json.dumps(found))
"""


Flavour = Literal["cu12", "cu13"]


def flavour_of(text: str | None) -> Flavour | None:
    """cu12 or cu13 from a distribution name, a local version (+cu130) or an image's base name (cuda:13.0.1)."""
    if not text:
        return None
    m = re.search(r"(?:cu|cuda)[-_:]?(1[23])", text.lower())
    if m is None:
        return None
    return "cu12" if m.group(1) == "12" else "cu13"


def from_image(image: str) -> Software:
    """The image's digest and labels on this node's Docker engine; None for what the engine does not answer."""
    digest = labels = None
    try:
        client = docker.connect(timeout=10)
        attrs = client.images.get(image).attrs
        digest = attrs.get("Id") if isinstance(attrs.get("Id"), str) else None
        config = attrs.get("Config") or {}
        labels = config.get("Labels") if isinstance(config, dict) else None
    except Exception:  # no engine, no such image, an SDK error: the facts are unknown, not a fault here
        digest = labels = None
    labels = labels if isinstance(labels, dict) else {}
    sglang, mooncake = labels.get(_SGLANG_LABEL), labels.get(_MOONCAKE_LABEL)
    return Software(launcher="compose", read_from=f"image {image}", image=image, image_digest=digest,
                    sglang_version=f"commit {sglang}" if sglang else None,
                    mooncake_version=f"commit {mooncake}" if mooncake else None,
                    mooncake_distribution=None, torch_version=None, wheel_flavour=flavour_of(labels.get(_BASE_LABEL)))


def from_python(python: str) -> Software:
    """The versions PYTHON's packages carry (asked of that interpreter, in a child process)."""
    names = ["sglang", "torch", *MOONCAKE_DISTRIBUTIONS]
    found: dict = {}
    try:
        proc = capture([python, "-c", _PROBE, json.dumps(names)], timeout=120)
        answer = json.loads(proc.stdout.strip().splitlines()[-1])
        found = answer if isinstance(answer, dict) else {}
    except (OSError, ToolMissing, ToolFailed, ValueError, IndexError):
        found = {}

    def text(name: str) -> str | None:
        value = found.get(name)
        return value if isinstance(value, str) and value else None

    mooncake = next((n for n in MOONCAKE_DISTRIBUTIONS if text(n)), None)
    torch = text("torch")
    flavour = flavour_of(mooncake) or flavour_of(torch)
    return Software(launcher="host", read_from=f"python {python}", image=None, image_digest=None,
                    sglang_version=text("sglang"), mooncake_version=text(mooncake) if mooncake else None,
                    mooncake_distribution=mooncake, torch_version=torch, wheel_flavour=flavour)


def unknown() -> Software:
    return Software(launcher=None, read_from=None, image=None, image_digest=None, sglang_version=None,
                    mooncake_version=None, mooncake_distribution=None, torch_version=None, wheel_flavour=None)
