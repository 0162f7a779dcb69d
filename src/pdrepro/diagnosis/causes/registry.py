"""Every cause the diagnosis reads, one line each, in the order the issue names them (the ranker orders the
findings; this order only breaks ties of equal share and fault)."""

from __future__ import annotations

from .base import Cause
from .engine import EngineCeiling
from .gid import Gid
from .knob import Knob
from .load import Load
from .mtu import Mtu
from .phases import Phases
from .placement import Placement
from .rails import RailSkew
from .relaxed import RelaxedOrdering
from .transport import TcpFallback

CAUSES: tuple[Cause, ...] = (
    TcpFallback(),
    RailSkew(),
    Mtu(),
    Gid(),
    RelaxedOrdering(),
    Placement(),
    Load(),
    Knob(),
    Phases(),
    EngineCeiling(),
)


def names() -> list[str]:
    return [c.name for c in CAUSES]
