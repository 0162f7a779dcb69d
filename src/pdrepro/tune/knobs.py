"""What the knob data says about a grid's keys, asked in one place.

The knobs engineer's data (scenario.launch_env: every variable the pinned releases read, generated from their
source) says which knobs only an RDMA transfer exercises (``tcp_cannot_judge``). Until that data is in this
build, this module answers "not known" rather than keep a list of its own: the tune report then says the data
was missing instead of naming knobs from a guess.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..scenario import launch_env


def tcp_cannot_judge(keys: Iterable[str]) -> tuple[str, ...] | None:
    """The keys a box whose KV moves over TCP cannot judge (RDMA-only knobs), in the given order; None when the
    knob data that says so is not in this build."""
    asked = tuple(keys)
    judge = getattr(launch_env, "tcp_cannot_judge", None)
    if judge is None:
        return None
    found = judge(asked)
    picked = set(found)
    return tuple(k for k in asked if k in picked)
