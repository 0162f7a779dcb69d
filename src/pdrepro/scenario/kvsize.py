"""How many bytes of KV cache one token carries, summed over all TP ranks.

This is what the prefill node ships to the decode node per prompt token, and
the numerator of every bandwidth figure. Decimal/binary units are applied only
where figures are printed (see ``units``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from ..core.errors import UserError
from ..core.strictmodel import Record, StrictInt

# Bytes per element of the KV cache for the dtypes a scenario may name.
DTYPE_BYTES: dict[str, int] = {
    "bfloat16": 2, "bf16": 2,
    "float16": 2, "fp16": 2, "half": 2,
    "float32": 4, "fp32": 4,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "float8_e4m3fn": 1, "float8_e5m2": 1,
}


# The same names as a type, sorted as the schema lists them (tests/scenario/test_kvsize.py holds the two equal).
DType = Literal["bf16", "bfloat16", "float16", "float32", "float8_e4m3fn", "float8_e5m2", "fp16", "fp32", "fp8",
                "fp8_e4m3", "fp8_e5m2", "half"]


class Geometry(Record):
    """The attention shape of a model, as its HF ``config.json`` states it."""

    num_hidden_layers: StrictInt
    num_attention_heads: StrictInt | None = None
    num_key_value_heads: StrictInt | None = None
    head_dim: StrictInt | None = None
    hidden_size: StrictInt | None = None
    # MLA (DeepSeek-style): a compressed latent plus a rope part per token and layer.
    kv_lora_rank: StrictInt | None = None
    qk_rope_head_dim: StrictInt | None = None
    # Not part of the KV size: what `pdrepro offline-model` needs beyond the attention to make weights of the
    # model's shape (unset: its own defaults, Qwen2.5-0.5B's).
    intermediate_size: StrictInt | None = None
    vocab_size: StrictInt | None = None

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    def check(self, source: str) -> None:
        # A zero would not fail later: `kv_heads or attention_heads` would quietly take the wrong count.
        for name in ("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "hidden_size",
                     "kv_lora_rank", "qk_rope_head_dim", "intermediate_size", "vocab_size"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UserError(f"{source}: {name} must be >= 1, got {value}; copy it from the model's config.json")
        if self.is_mla:
            if self.qk_rope_head_dim is None:
                raise UserError(f"{source}: an MLA geometry (kv_lora_rank) also needs qk_rope_head_dim")
            return
        if self.num_key_value_heads is None and self.num_attention_heads is None:
            raise UserError(f"{source}: geometry needs num_key_value_heads (or num_attention_heads)")
        if self.head_dim is None and (self.hidden_size is None or self.num_attention_heads is None):
            raise UserError(f"{source}: geometry needs head_dim, or hidden_size and num_attention_heads")
        heads, kv_heads = self.num_attention_heads, self.num_key_value_heads
        if heads is not None and kv_heads is not None and (kv_heads > heads or heads % kv_heads):
            raise UserError(f"{source}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}, "
                            "which no attention layout has; copy both from the model's config.json")
        if self.head_dim is None and self.hidden_size is not None and heads is not None and self.hidden_size % heads:
            raise UserError(f"{source}: hidden_size {self.hidden_size} does not divide by num_attention_heads {heads}; "
                            "give head_dim from the model's config.json")


def dtype_bytes(dtype: str, source: str = "scenario") -> int:
    try:
        return DTYPE_BYTES[dtype.lower()]
    except KeyError:
        raise UserError(
            f"{source}: unknown KV dtype {dtype!r}; use one of {', '.join(sorted(DTYPE_BYTES))}"
        ) from None


def kv_bytes_per_token(geometry: Geometry, dtype: str, tp: int, source: str = "scenario") -> int:
    """Bytes of KV per token over all ``tp`` ranks of the prefill server."""
    size = dtype_bytes(dtype, source)
    # Geometry.check, run when the geometry was loaded, guarantees the fields each layout needs.
    if geometry.is_mla:
        assert geometry.kv_lora_rank is not None and geometry.qk_rope_head_dim is not None
        # The latent is not split by head: every rank keeps the whole of it.
        per_layer = (geometry.kv_lora_rank + geometry.qk_rope_head_dim) * size
        return geometry.num_hidden_layers * per_layer * tp
    kv_heads = geometry.num_key_value_heads or geometry.num_attention_heads
    assert kv_heads is not None
    if geometry.head_dim:
        head_dim = geometry.head_dim
    else:
        assert geometry.hidden_size is not None and geometry.num_attention_heads is not None
        head_dim = geometry.hidden_size // geometry.num_attention_heads
    if kv_heads >= tp:
        if kv_heads % tp:
            raise UserError(f"{source}: {kv_heads} KV heads do not split evenly over TP {tp}; pick a TP that divides them")
        heads_all_ranks = kv_heads
    else:
        if tp % kv_heads:
            raise UserError(f"{source}: TP {tp} is not a multiple of the {kv_heads} KV heads; pick a TP they divide")
        # Fewer KV heads than ranks: each rank holds one head, copied, and ships it.
        heads_all_ranks = tp
    return geometry.num_hidden_layers * 2 * heads_all_ranks * head_dim * size


_GEOMETRY_KEYS = (
    "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
    "hidden_size", "kv_lora_rank", "qk_rope_head_dim",
)


def geometry_from_config(path: Path) -> Geometry:
    """Read the attention geometry from a HF ``config.json``."""
    try:
        config = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise UserError(f"{path}: no such file; point the scenario's model.config_json at the model's config.json") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}); "
                        "use the model's original config.json") from None
    if not isinstance(config, dict):
        raise UserError(f"{path}: expected a JSON object; use the model's original config.json")
    # Multimodal configs nest the language model's settings.
    if "num_hidden_layers" not in config and isinstance(config.get("text_config"), dict):
        config = config["text_config"]
    if "num_hidden_layers" not in config:
        raise UserError(f"{path}: has no num_hidden_layers; is this a transformer's config.json?")
    values = {k: config[k] for k in _GEOMETRY_KEYS if isinstance(config.get(k), int) and not isinstance(config.get(k), bool)}
    geometry = Geometry(**values)
    geometry.check(str(path))
    return geometry
