"""The NVIDIA driver a node runs, held to what the GPU image's CUDA needs.

The image's user space (torch, cuDNN, NCCL, the toolkit) is built for one CUDA
major version, and a CUDA major version runs only on drivers of a branch at
least as new as the one it shipped with: CUDA 13 needs R580 or newer. The
oldest branch is ``GPU_MIN_DRIVER`` in versions.env, next to ``CUDA_VERSION``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..pins import load_pins
from .tools import ToolFailed, ToolMissing, run_tool

QUERY = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]

# The query prints one bare version per GPU; the banner and `nvidia-smi -q`
# label it "Driver Version", which R610 and newer renamed "KMD Version".
_BARE = re.compile(r"^\s*(\d+\.\d+(?:\.\d+)*)\s*$")
_LABELLED = re.compile(r"\b(?:Driver|KMD) Version\s*:\s*(\d+\.\d+(?:\.\d+)*)")


def parse_driver_version(text: str) -> str:
    """The driver version in nvidia-smi's output (query CSV, banner or ``-q``)."""
    found = []
    for line in text.splitlines():
        match = _BARE.match(line) or _LABELLED.search(line)
        if match:
            found.append(match.group(1))
    if not found:
        raise ValueError("no driver version in nvidia-smi's output")
    if len(set(found)) > 1:
        raise ValueError(f"nvidia-smi reports several driver versions: {', '.join(sorted(set(found)))}")
    return found[0]


def branch(version: str) -> int:
    """580.65.06 -> 580."""
    return int(version.split(".", 1)[0])


@dataclass(frozen=True)
class Requirement:
    """The oldest driver branch the GPU image runs on, and why."""

    minimum: int
    cuda_major: int

    @classmethod
    def from_pins(cls, pins: dict[str, str] | None = None) -> Requirement:
        pins = load_pins() if pins is None else pins
        return cls(int(pins["GPU_MIN_DRIVER"]), int(pins["CUDA_VERSION"].split(".", 1)[0]))

    @property
    def fix(self) -> str:
        return f"install {self.minimum} or newer"

    def too_old(self, version: str) -> str | None:
        """Why VERSION will not run the image, or None when it will."""
        if branch(version) >= self.minimum:
            return None
        return f"driver {version} is older than R{self.minimum}, which CUDA {self.cuda_major} in the GPU image needs"

    def problem(self, version: str) -> str | None:
        """One line with the fix when VERSION is too old; None when it will do."""
        reason = self.too_old(version)
        return f"{reason}: {self.fix}" if reason else None

    def report(self, version: str | None) -> dict:
        """What `pdrepro versions` adds to the driver it found."""
        return {"minimum_branch": self.minimum, "for_cuda": self.cuda_major,
                "meets_minimum": None if version is None else self.problem(version) is None}


def query_driver_version() -> tuple[str | None, str | None]:
    """(version, None), or (None, why it could not be read) — never raises."""
    try:
        return parse_driver_version(run_tool(QUERY)), None
    except ToolMissing:
        return None, "nvidia-smi not found on PATH"
    except (ToolFailed, ValueError) as exc:
        return None, str(exc)
