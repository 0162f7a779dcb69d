"""The scenario's ``ab`` section: the arms `pdrepro ab` runs when the command names none."""

from __future__ import annotations

from pydantic import Field

from ..core.errors import UserError
from ..core.strictmodel import Record
from .launch_section import TransferBackendName


class AbSection(Record):
    """The arms `pdrepro ab` runs when the command names none: one per transfer backend, in this order."""

    backends: tuple[TransferBackendName, ...] = Field(
        min_length=2, description="transfer backends, one arm each, the first the base of the TTFT ratios")
    env: dict[TransferBackendName, dict[str, str]] = Field(
        default_factory=dict, description="per backend, variables its arm's servers get on top of launch.env "
                                          "(nixl: {UCX_TLS: tcp,cuda_copy})")

    def check(self, source: str) -> None:
        if len(set(self.backends)) != len(self.backends):
            raise UserError(f"{source}: ab.backends names a backend twice; each arm runs a different one")
        stray = sorted(set(self.env) - set(self.backends))
        if stray:
            raise UserError(f"{source}: ab.env.{stray[0]} is for a backend ab.backends does not run; drop it or add "
                            "the backend")
