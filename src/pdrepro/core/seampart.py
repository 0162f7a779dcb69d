"""What a serving engine and a transfer backend both tell the rest of the bundle about themselves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class SeamPart(Protocol):
    # Read-only members: the modules are frozen dataclasses.
    # The scenario's value and the registry's key.
    @property
    def name(self) -> str: ...
    # For people: "SGLang", "Mooncake over TCP", "NIXL (UCX)".
    @property
    def label(self) -> str: ...
    # The environment variables a scenario's launch.env may set for it, by prefix; provenance records them.
    @property
    def env_prefixes(self) -> tuple[str, ...]: ...
    # Modules a server imports for it, and the distributions provenance records (first found names it).
    @property
    def modules(self) -> tuple[str, ...]: ...
    @property
    def distributions(self) -> tuple[str, ...]: ...
    # provenance.json's pins field -> the versions.env key holding its pinned commit.
    @property
    def pin_keys(self) -> Mapping[str, str]: ...
    # Its knobs as data generated from its pinned source (`make knobs`): the file under pdrepro/knobdata/, or
    # None where no list is kept (a prefix then stands for all its variables).
    @property
    def knob_file(self) -> str | None: ...
