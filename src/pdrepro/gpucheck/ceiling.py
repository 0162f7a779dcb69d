"""What the Mooncake engine alone moves between two processes of this box, per prompt length:
the ceiling a run's per-request KV bandwidth is set against on the same GPUs and transport.

Written by `pdrepro gpu-check` as RUN/engine-ceiling.json (``EngineCeiling``); read by the report.
Bytes are bytes, times milliseconds, bandwidth decimal GB/s (1e9 B/s) at the median transfer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from ..errors import UserError
from ..strictmodel import Int, Number, Record, load

FILE_NAME = "engine-ceiling.json"
# How one request's KV is cut into the transfer requests of one batch:
#   blocks: fixed blocks of --block-mib; one: the whole request in one; layers: one K and one V
#   block per layer (2 x num_hidden_layers), the shape of SGLang's per-layer KV buffers.
LAYOUTS = ("blocks", "one", "layers")


class LayoutFigure(Record):
    layout: Literal[LAYOUTS]
    blocks: Int(1)                      # transfer requests in the batch
    median_ms: Number(0)
    min_ms: Number(0)
    max_ms: Number(0)
    GB_s: Number(0)                     # nbytes / median, decimal GB/s
    verified: Int(0)                    # timed transfers whose received bytes matched


class CeilingRow(Record):
    prompt_len: Int(1)
    nbytes: Int(1)                      # one request's KV as one prefill TP rank sends it
    layouts: tuple[LayoutFigure, ...]
    # The best layout's figure: what the engine can do with this request on this box.
    ceiling_GB_s: Number(0) | None = None


class EngineCeiling(Record):
    schema_version: Literal[1] = 1
    scenario: str
    memory: Literal["gpu", "host"]
    gpus: dict[str, int]                # prefill, decode (the same id: both sides share one GPU)
    same_gpu: bool
    direction: Literal["write", "read"]
    transport_requested: Literal["auto", "tcp", "rdma"]
    transport: str | None               # what the engine's log says it installed
    repeats: Int(1)
    rows: tuple[CeilingRow, ...]

    def ceiling_GB_s(self, prompt_len: int) -> float | None:
        for row in self.rows:
            if row.prompt_len == prompt_len:
                return row.ceiling_GB_s
        return None


def path(out: Path) -> Path:
    return Path(out) / FILE_NAME


def read(file: Path) -> EngineCeiling:
    try:
        data = json.loads(Path(file).read_text())
    except FileNotFoundError:
        raise UserError(f"{file}: no such file; measure it with `pdrepro gpu-check --out RUN`") from None
    except (OSError, ValueError) as exc:
        raise UserError(f"{file}: not readable JSON ({exc}); measure it again with `pdrepro gpu-check`") from None
    return load(EngineCeiling, data, str(file))
