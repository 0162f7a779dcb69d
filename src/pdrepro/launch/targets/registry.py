"""The targets a launch plan is rendered for, in one place: ``pdrepro render --target NAME`` reads TARGETS.
A new target implements ``base.Target``, adds itself here and its name to ``names.TARGET_NAMES`` (what the
command line offers without importing the targets)."""

from __future__ import annotations

from . import compose, k8s, onebox, slurm
from .base import Target
from .names import TARGET_NAMES

TARGETS: dict[str, Target] = {t.name: t for t in (compose.TARGET, k8s.TARGET, onebox.TARGET, slurm.TARGET)}

if tuple(sorted(TARGETS)) != TARGET_NAMES:  # the help would offer a target that is not here, or hide one that is
    raise ImportError(f"launch.targets: names.TARGET_NAMES {TARGET_NAMES} differ from the targets {tuple(sorted(TARGETS))}")
