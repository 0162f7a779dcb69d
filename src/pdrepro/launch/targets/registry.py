"""The targets a launch plan is rendered for, in one place: ``pdrepro render --target NAME`` reads TARGETS.
A new target implements ``base.Target`` and adds itself here."""

from __future__ import annotations

from . import compose, k8s, onebox, slurm
from .base import Target

TARGETS: dict[str, Target] = {t.name: t for t in (compose.TARGET, k8s.TARGET, onebox.TARGET, slurm.TARGET)}
