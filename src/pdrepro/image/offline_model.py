"""A model SGLang can serve, made without a download: for proving the one-box path on a GPU box
that reaches no model hub.

The weights are random (bf16, normal with the usual 0.02 spread) but the shapes are those of the
scenario's model, so the KV cache per token, the figure every check is about, is the real one.
The tokenizer is a word-level one of the model's vocabulary size (every id is a word ``w<id>``),
which also holds the byte-level alphabet: transformers 5 rebuilds a Qwen2 tokenizer as byte-level
BPE from the vocabulary when the bench client loads it, and without those symbols every prompt
encodes to nothing. The dataset is ShareGPT-shaped text of those words, which the bench client's
random dataset turns into token ids. Outputs are gibberish; sizes and timings are real.

Only dense GQA models of the Qwen2 family are made (the one-box scenario's); the config comes from
transformers' own class so it is what SGLang's loader expects of that transformers version.
"""

from __future__ import annotations

import json
import math
import random
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..core.errors import UserError
from ..scenario.kvsize import Geometry

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<unk>")

# Bounds checked before a byte is written, each well past any served model's figure (Qwen2.5-0.5B: vocabulary
# 151936, 24 layers, intermediate 4864, 32768 positions; the largest open models: vocabularies of 256k, about
# 128 layers, hidden sizes of 16k): a figure past them is a typo, and would fill a disk or the memory the
# vocabulary and the checkpoint header are built in.
MAX_VOCAB = 1 << 20
MAX_LAYERS = 512
MAX_HIDDEN = 1 << 16
MAX_INTERMEDIATE = 1 << 18
MAX_POSITIONS = 1 << 22
MAX_CONVERSATIONS = 1 << 20
# The dataset's turns: a human turn of 40..399 words and a model turn of 20..199 (write_dataset).
HUMAN_WORDS, GPT_WORDS = (40, 400), (20, 200)


@dataclass(frozen=True)
class ModelShape:
    """What the weights need beyond the attention geometry the scenario states."""

    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab_size: int
    intermediate_size: int
    max_positions: int

    @property
    def hidden_size(self) -> int:
        return self.heads * self.head_dim

    def tensors(self) -> list[tuple[str, tuple[int, ...]]]:
        """Names and shapes of a Qwen2 checkpoint with tied embeddings (no lm_head)."""
        h, kv = self.hidden_size, self.kv_heads * self.head_dim
        out: list[tuple[str, tuple[int, ...]]] = [("model.embed_tokens.weight", (self.vocab_size, h))]
        for i in range(self.layers):
            p = f"model.layers.{i}"
            out += [
                (f"{p}.input_layernorm.weight", (h,)),
                (f"{p}.self_attn.q_proj.weight", (h, h)), (f"{p}.self_attn.q_proj.bias", (h,)),
                (f"{p}.self_attn.k_proj.weight", (kv, h)), (f"{p}.self_attn.k_proj.bias", (kv,)),
                (f"{p}.self_attn.v_proj.weight", (kv, h)), (f"{p}.self_attn.v_proj.bias", (kv,)),
                (f"{p}.self_attn.o_proj.weight", (h, h)),
                (f"{p}.post_attention_layernorm.weight", (h,)),
                (f"{p}.mlp.gate_proj.weight", (self.intermediate_size, h)),
                (f"{p}.mlp.up_proj.weight", (self.intermediate_size, h)),
                (f"{p}.mlp.down_proj.weight", (h, self.intermediate_size)),
            ]
        out.append(("model.norm.weight", (h,)))
        return out


def shape_for(geometry: Geometry, vocab_size: int, intermediate_size: int, max_positions: int, source: str) -> ModelShape:
    if geometry.is_mla:
        raise UserError(f"{source}: offline models are made for dense GQA geometries only; this scenario's model is MLA")
    heads = geometry.num_attention_heads
    kv_heads = geometry.num_key_value_heads or heads
    head_dim = geometry.head_dim or (geometry.hidden_size // heads if geometry.hidden_size and heads else None)
    if not heads or not kv_heads or not head_dim:
        raise UserError(f"{source}: the geometry needs num_attention_heads and head_dim (or hidden_size) to make a model")
    for name, value, top in (("--vocab-size", vocab_size, MAX_VOCAB), ("--intermediate-size", intermediate_size,
                                                                         MAX_INTERMEDIATE),
                             ("--max-positions", max_positions, MAX_POSITIONS)):
        if not 1 <= value <= top:
            raise UserError(f"{name} {value}: give a number from 1 to {top}")
    if vocab_size < len(SPECIAL_TOKENS) + 256:
        raise UserError(f"vocab size {vocab_size} cannot hold the special tokens and the byte alphabet; give >= 260")
    layers = geometry.num_hidden_layers
    for name, value, top in (("num_hidden_layers", layers, MAX_LAYERS), ("hidden size (heads x head_dim)",
                                                                          heads * head_dim, MAX_HIDDEN)):
        if not 1 <= value <= top:
            raise UserError(f"{source}: {name} is {value}; offline models are made up to {top}: fix the geometry")
    if kv_heads > heads or heads % kv_heads:
        raise UserError(f"{source}: {kv_heads} KV heads do not divide {heads} attention heads; fix the geometry")
    return ModelShape(layers, heads, kv_heads, head_dim, vocab_size, intermediate_size, max_positions)


def checkpoint_bytes(shape: ModelShape) -> int:
    """The size of model.safetensors: its 8-byte length, its JSON header and the bf16 weights."""
    return 8 + len(_header(shape.tensors())[0]) + 2 * sum(math.prod(s) for _, s in shape.tensors())


def tokenizer_bytes(vocab_size: int) -> int:
    """An upper estimate of the tokenizer files: each word ``w<id>`` is stored with its id in tokenizer.json
    (about 2 x 7 digits and JSON punctuation), plus the fixed files around it."""
    return vocab_size * 48 + (1 << 20)


def dataset_bytes(vocab_size: int, conversations: int) -> int:
    """An upper bound of the dataset: every word at its longest (``w`` and the digits of the largest id, a
    space) at the most words a conversation has, plus its JSON frame."""
    word = 2 + len(str(vocab_size))
    return conversations * ((HUMAN_WORDS[1] + GPT_WORDS[1]) * word + 128) + 16


def _bf16_pool(count: int, seed: int) -> bytes:
    """``count`` bf16 values, normal with sigma 0.02, as little-endian bytes."""
    import numpy as np

    values = np.random.default_rng(seed).standard_normal(count, dtype=np.float32) * np.float32(0.02)
    # bf16 is the top half of a float32; rounding is irrelevant for random weights.
    return (values.view(np.uint32) >> 16).astype("<u2").tobytes()


def _header(tensors: list[tuple[str, tuple[int, ...]]]) -> tuple[bytes, int]:
    """The safetensors JSON header (padded so the data starts 8-byte aligned) and the bytes of data it names."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape in tensors:
        n = 2 * math.prod(shape)
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    blob = json.dumps(header, separators=(",", ":")).encode()
    return blob + b" " * (-len(blob) % 8), offset


def write_safetensors(out: BinaryIO, tensors: list[tuple[str, tuple[int, ...]]], seed: int) -> int:
    """Writes bf16 tensors in the safetensors layout to ``out``; returns the bytes of weights written.

    Norm weights are ones (a zero or random RMSNorm scale makes every activation collapse or blow
    up); the rest cycle through one random pool, enough for weights nobody reads for meaning.
    """
    blob, total = _header(tensors)
    pool = _bf16_pool(1 << 24, seed)
    one = struct.pack("<H", 0x3F80)  # 1.0 in bf16
    out.write(struct.pack("<Q", len(blob)))
    out.write(blob)
    for name, shape in tensors:
        n = 2 * math.prod(shape)
        if name.endswith("layernorm.weight") or name == "model.norm.weight":
            out.write(one * (n // 2))
            continue
        while n:
            chunk = min(n, len(pool))
            out.write(pool[:chunk])
            n -= chunk
    return total


def vocabulary(vocab_size: int) -> dict[str, int]:
    from tokenizers.pre_tokenizers import ByteLevel

    vocab = {s: i for i, s in enumerate(SPECIAL_TOKENS)}
    for ch in ByteLevel.alphabet():
        vocab.setdefault(ch, len(vocab))
    while len(vocab) < vocab_size:
        vocab[f"w{len(vocab)}"] = len(vocab)
    return vocab


def write_tokenizer(out: Path, vocab_size: int, max_positions: int) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(vocab=vocabulary(vocab_size), unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="<|endoftext|>",
                                   pad_token="<|endoftext|>", bos_token=None)
    fast.model_max_length = max_positions
    fast.save_pretrained(out)


def write_config(out: Path, shape: ModelShape) -> None:
    from transformers import Qwen2Config

    # transformers 5's Qwen2Config takes head_dim and rope_theta as extra keywords (config.json gets head_dim
    # and rope_parameters.rope_theta) though its typed signature lists neither: a stub gap, not a wrong call.
    cfg = Qwen2Config(vocab_size=shape.vocab_size, hidden_size=shape.hidden_size,
                      intermediate_size=shape.intermediate_size, num_hidden_layers=shape.layers,
                      num_attention_heads=shape.heads, num_key_value_heads=shape.kv_heads, head_dim=shape.head_dim,
                      max_position_embeddings=shape.max_positions, rope_theta=1000000.0, tie_word_embeddings=True,
                      rms_norm_eps=1e-6, bos_token_id=None, eos_token_id=0, sliding_window=None,
                      use_sliding_window=False)  # type: ignore[call-arg]
    cfg.architectures = ["Qwen2ForCausalLM"]
    cfg.dtype = "bfloat16"
    cfg.save_pretrained(out)


def write_dataset(out: BinaryIO, vocab_size: int, conversations: int, seed: int) -> None:
    """ShareGPT-shaped: a list of {"id", "conversations": [{"from", "value"}, ...]}, streamed entry by entry
    (a large dataset is never held whole in memory)."""
    rng = random.Random(seed)
    first_word = len(SPECIAL_TOKENS) + 256  # past the specials and the byte alphabet

    def words(n: int) -> str:
        return " ".join(f"w{rng.randrange(first_word, vocab_size)}" for _ in range(n))

    out.write(b"[")
    for k in range(conversations):
        entry = {"id": str(k), "conversations": [{"from": "human", "value": words(rng.randrange(*HUMAN_WORDS))},
                                                 {"from": "gpt", "value": words(rng.randrange(*GPT_WORDS))}]}
        out.write((", " if k else "").encode() + json.dumps(entry).encode())
    out.write(b"]")


def missing_libraries() -> list[str]:
    """The libraries the model is made with that this Python lacks; found without importing them (importing
    transformers prints a notice, which is no line for a refusal to carry)."""
    from importlib.util import find_spec

    return [module for module in ("numpy", "tokenizers", "transformers") if find_spec(module) is None]


# What makes a folder a model's: weights, a config, a tokenizer. Their presence is what --force overrides.
_MODEL_PATTERNS = ("config.json", "generation_config.json", "*.safetensors", "*.safetensors.index.json", "*.bin",
                   "*.bin.index.json", "*.gguf", "*.pt", "*.pth", "tokenizer*.json", "tokenizer.model", "vocab.json",
                   "merges.txt", "special_tokens_map.json", "chat_template.jinja")


def model_files(folder: Path) -> list[str]:
    """Names in ``folder`` that belong to a model (by the patterns above), sorted; empty for no folder."""
    try:
        names = [p.name for p in Path(folder).iterdir()]
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(n for n in names if any(Path(n).match(pattern) for pattern in _MODEL_PATTERNS))
