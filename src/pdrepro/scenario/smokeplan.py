"""What the smoke moves: one KV-cache-sized buffer per prompt length.

The plan is computed once on the host from a scenario and handed to both
containers as JSON, so the two sides cannot disagree on sizes or pattern.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass

from ..core.errors import UserError
from ..core.units import GB, MiB

# Below 1 MiB per block the TCP transport spends its time on per-slice overhead.
MIN_BLOCK_BYTES = MiB
# The two agents each hold one buffer of the largest size; keep a laptop safe.
DEFAULT_MAX_TRANSFER_BYTES = 1 * GB


@dataclass(frozen=True)
class PlanRow:
    prompt_len: int
    kv_bytes: int


@dataclass(frozen=True)
class SmokePlan:
    rows: tuple[PlanRow, ...]
    repeats: int
    block_bytes: int
    seed: int

    @property
    def max_bytes(self) -> int:
        return max(r.kv_bytes for r in self.rows)

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "rows": [asdict(r) for r in self.rows]})

    @classmethod
    def from_json(cls, text: str) -> SmokePlan:
        try:
            data = json.loads(text)
            rows = tuple(PlanRow(int(r["prompt_len"]), int(r["kv_bytes"])) for r in data["rows"])
            plan = cls(rows, int(data["repeats"]), int(data["block_bytes"]), int(data["seed"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise UserError(f"SMOKE_PLAN is not a valid smoke plan ({exc}); let `pdrepro smoke` set it") from None
        plan.validate()
        return plan

    def validate(self) -> None:
        if not self.rows:
            raise UserError("the smoke plan has no prompt lengths; give at least one")
        if self.repeats < 1:
            raise UserError(f"repeats must be >= 1, got {self.repeats}")
        if self.block_bytes < MIN_BLOCK_BYTES:
            raise UserError(f"block size {self.block_bytes} B is below 1 MiB; the TCP transport needs blocks of >= 1 MiB")


def make_plan(scenario, prompt_lens=None, repeats: int = 5, block_bytes: int = 4 * MiB,
              max_transfer_bytes: int = DEFAULT_MAX_TRANSFER_BYTES) -> SmokePlan:
    """One row per prompt length, sized by the scenario's KV model."""
    lens = tuple(prompt_lens) if prompt_lens else tuple(scenario.sweep.prompt_lens)
    unknown = sorted(set(lens) - set(scenario.sweep.prompt_lens))
    if unknown:
        raise UserError(
            f"prompt length {unknown[0]} is not in scenario {scenario.name}; "
            f"pick from {', '.join(map(str, scenario.sweep.prompt_lens))}"
        )
    rows = tuple(PlanRow(n, scenario.kv_bytes(n)) for n in sorted(lens))
    plan = SmokePlan(rows, repeats, block_bytes, scenario.sweep.seed)
    plan.validate()
    if plan.max_bytes > max_transfer_bytes:
        raise UserError(
            f"the largest transfer ({plan.max_bytes / GB:.2f} GB at {rows[-1].prompt_len} tokens) exceeds the "
            f"{max_transfer_bytes / GB:.2f} GB cap; use a smaller model geometry in the scenario or fewer --prompt-lens"
        )
    return plan


def pattern(seed: int, nbytes: int) -> bytes:
    """The bytes the prefill side holds; both sides derive them from the seed."""
    return random.Random(seed).randbytes(nbytes)


def digest(data) -> str:
    return hashlib.blake2b(data, digest_size=32).hexdigest()


def expected_digests(plan: SmokePlan) -> dict[int, str]:
    """Digest of the first kv_bytes of the pattern, per prompt length."""
    data = memoryview(pattern(plan.seed, plan.max_bytes))
    return {r.prompt_len: digest(data[: r.kv_bytes]) for r in plan.rows}


def blocks(nbytes: int, block_bytes: int) -> list[tuple[int, int]]:
    """(offset, length) pairs covering nbytes; the last block may be short."""
    return [(off, min(block_bytes, nbytes - off)) for off in range(0, nbytes, block_bytes)]
