"""The targets' names, without the targets: `render --target` declares its choices from here, so building the
command line imports none of the renderers (pydantic, YAML). targets.registry maps each name to its target, and
refuses to load when the two disagree."""

from __future__ import annotations

TARGET_NAMES: tuple[str, ...] = ("compose", "k8s", "onebox", "slurm")
