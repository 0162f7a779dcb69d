"""``pdrepro offline-model``: a random-weight model, tokenizer and dataset with a scenario's geometry."""

from __future__ import annotations

import time
from pathlib import Path

from ..core.errors import UserError
from ..image.offline_model import missing_libraries, shape_for, write_config, write_dataset, write_safetensors, write_tokenizer
from ..scenario.model import load_scenario

# Qwen2.5-0.5B-Instruct's values beyond the attention geometry (its config.json): the one-box
# scenario's model, the only one a box without a hub needs.
DEFAULT_VOCAB = 151936
DEFAULT_INTERMEDIATE = 4864
DEFAULT_MAX_POSITIONS = 32768


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "offline-model", help="make a random-weight model, tokenizer and dataset for a scenario, without a download",
        description="Writes a model SGLang can load (config.json, model.safetensors in bf16, tokenizer) with the "
                    "scenario's layers, heads and KV heads, and a ShareGPT-shaped dataset of its vocabulary, so the "
                    "one-box check runs on a machine that reaches no model hub. KV sizes and timings are real; the "
                    "outputs are gibberish. Needs numpy, tokenizers and transformers (what SGLang installs).")
    p.add_argument("--scenario", default="onebox-qwen25-0.5b", help="scenario name or YAML path (default: %(default)s)")
    p.add_argument("--out", required=True, type=Path, help="model folder to write (give it to --model)")
    p.add_argument("--dataset", required=True, type=Path, help="dataset JSON file to write (give it to --dataset)")
    p.add_argument("--vocab-size", type=int, default=DEFAULT_VOCAB, help="default: %(default)s")
    p.add_argument("--intermediate-size", type=int, default=DEFAULT_INTERMEDIATE, help="default: %(default)s")
    p.add_argument("--max-positions", type=int, default=DEFAULT_MAX_POSITIONS, help="default: %(default)s")
    p.add_argument("--conversations", type=int, default=400, help="dataset entries (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run)


def run(args) -> int:
    missing = missing_libraries()
    if missing:
        raise UserError(f"offline-model needs {', '.join(missing)} in this Python ({', '.join(missing)} not importable); "
                        "run it with the Python that serves SGLang, or pip install them")
    scenario = load_scenario(args.scenario)
    geometry = scenario.model.geometry
    if geometry is None:
        raise UserError(f"{args.scenario}: the scenario reads its model from config_json; offline models need an inline "
                        "geometry")
    if not scenario.model.name.lower().startswith("qwen2"):
        # The checkpoint layout written is a dense Qwen2's; another family's loader would not take it.
        raise UserError(f"{args.scenario}: its model {scenario.model.name} is not a dense Qwen2; offline models are made "
                        "for Qwen2-family scenarios such as onebox-qwen25-0.5b")
    shape = shape_for(geometry, args.vocab_size, args.intermediate_size, args.max_positions, args.scenario)
    if args.out.exists() and not args.out.is_dir():
        raise UserError(f"--out {args.out}: exists and is not a folder; give a folder path")
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    write_config(args.out, shape)
    write_tokenizer(args.out, shape.vocab_size, shape.max_positions)
    written = write_safetensors(args.out / "model.safetensors", shape.tensors(), args.seed)
    write_dataset(args.dataset, shape.vocab_size, args.conversations, args.seed + 1)
    print(f"offline-model: {scenario.name}'s geometry ({shape.layers} layers, {shape.heads} heads, {shape.kv_heads} KV "
          f"heads of {shape.head_dim}), vocabulary {shape.vocab_size}: {written / 1e9:.2f} GB of bf16 weights in "
          f"{args.out}, dataset {args.dataset} ({args.conversations} conversations), {time.monotonic() - t0:.1f} s")
    return 0
