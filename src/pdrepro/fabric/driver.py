"""The NVIDIA driver a node runs, held to what the GPU image's CUDA needs.

The image's user space (torch, cuDNN, NCCL, the toolkit) is built for one CUDA
major version, and a CUDA major version runs only on drivers of a branch at
least as new as the one it shipped with: CUDA 13 needs R580 or newer. The
oldest branch is ``GPU_MIN_DRIVER`` in versions.env, next to ``CUDA_VERSION``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.pins import load_pins


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
