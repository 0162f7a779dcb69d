"""The one interface of a launch target (registered in targets.registry).

Every target answers the same two questions (``Target``): which hosts the plan's servers run on (node
addresses, pod names, or the sbatch script's address variables), and which files place the plan there,
with the commands that run them (``Rendered``). `pdrepro render` writes and prints what it gets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ...scenario.model import Scenario
    from ..plan import Plan

Hosts = tuple[tuple[str, ...], tuple[str, ...]]   # prefill hosts, decode hosts


@dataclass(frozen=True)
class Rendered:
    files: dict[str, str]                       # file name in --out -> its text, in the order written
    commands: str = ""                          # how to run them: printed first
    wrote: str = ""                             # said after the list of written files
    notes: tuple[str, ...] = ()                 # printed last, one line each
    executable: frozenset[str] = field(default_factory=frozenset)


class Target(Protocol):
    name: str

    def hosts(self, scenario: Scenario, options: Any) -> Hosts:
        """The hosts of the plan's servers, from the render options (bad ones: UserError)."""
        ...

    def render(self, plan: Plan, options: Any, out: str) -> Rendered:
        """The plan placed on this target: files for --out (a folder named ``out`` in the commands)."""
        ...


