"""RUN/engine-ceiling.json: what the Mooncake engine alone moves on the run's own box.

Two processes on the same GPUs with the same transport write one request's KV
of a prompt length, outside SGLang, several times after a warm-up (`pdrepro
gpu-check` on the box; the recorded H200 run's file came from a script of the
same measurement). Each entry is keyed "<tokens>/<shape>": "one" writes the KV
as one block, "layers" as one batch of per-layer K/V blocks (what SGLang's
per-layer buffers look like to the engine). Rates are decimal GB/s over the
median time. The report sets each length's per-request KV bandwidth against
the best shape at that length: the one-box analogue of "% of line rate".
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import ConfigDict, Field, ValidationError

from .strictmodel import Int, Number, Record

FILE_NAME = "engine-ceiling.json"
_KEY = re.compile(r"(?P<tokens>\d+)/(?P<shape>[a-z]+)")


class CeilingEntry(Record):
    # gpu-check may record more about each entry (transport, GPUs): what is read here must be there.
    model_config = ConfigDict(extra="ignore", frozen=True)

    bytes: Int(1) = Field(description="bytes one write moved: one request's KV at that length")
    median_ms: Number(ge=0) = Field(description="median time of the timed writes, milliseconds")
    min_ms: Number(ge=0) = Field(description="fastest write, milliseconds")
    max_ms: Number(ge=0) = Field(description="slowest write, milliseconds")
    GB_s: Number(ge=0) = Field(description="bytes over the median time, decimal GB/s")


class CeilingError(ValueError):
    """The file is not an engine ceiling as gpu-check writes it; the message names the fix."""


def load_ceiling(path: Path) -> dict[int, dict[str, CeilingEntry]] | None:
    """tokens -> shape -> entry; None when the run has no such file."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CeilingError(f"{path}: not readable JSON ({type(exc).__name__}); measure it again with "
                           "`pdrepro gpu-check` on the run's box, or move it aside") from None
    if not isinstance(data, dict) or not data:
        raise CeilingError(f"{path}: holds no '<tokens>/<shape>' entries; measure it again with `pdrepro gpu-check`")
    out: dict[int, dict[str, CeilingEntry]] = {}
    for key, value in data.items():
        m = _KEY.fullmatch(str(key))
        if m is None:
            raise CeilingError(f"{path}: entry {key!r} is not '<tokens>/<shape>' (e.g. '4096/layers'); "
                               "measure it again with `pdrepro gpu-check`")
        try:
            entry = CeilingEntry.model_validate(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise CeilingError(f"{path}: entry {key!r}: {where or 'value'}: {first.get('msg')}; "
                               "measure it again with `pdrepro gpu-check`") from None
        out.setdefault(int(m["tokens"]), {})[m["shape"]] = entry
    return out


def against_rows(ceiling: dict[int, dict[str, CeilingEntry]], rows: list[dict]) -> dict[str, dict]:
    """Per measured length with a ceiling of the same bytes: the engine's best shape and the ratio."""
    out: dict[str, dict] = {}
    for row in rows:
        L, bw = row.get("prompt_len"), row.get("bandwidth_GB_s")
        shapes = {name: e for name, e in (ceiling.get(L) or {}).items() if e.bytes == row.get("kv_bytes")}
        if not shapes or bw is None:
            continue
        shape, best = max(shapes.items(), key=lambda item: item[1].GB_s)
        out[str(L)] = {"bandwidth_GB_s": bw, "engine_GB_s": best.GB_s, "engine_shape": shape,
                       "shapes_GB_s": {name: e.GB_s for name, e in sorted(shapes.items())},
                       "ratio": bw / best.GB_s if best.GB_s else None}
    return out
