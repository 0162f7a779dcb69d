"""``pdrepro offline-model``: a random-weight model, tokenizer and dataset with a scenario's geometry.

It writes into folders the user names, so it never clobbers and never follows: a folder that already holds a
model, or a dataset file that already exists, is refused unless --force; a link (or a folder, a FIFO) where a
file goes is refused even with --force; every size is bounded, and the whole is held against the free disk,
before a byte is written; the files land through the shared safe writer (pdrepro.core.safewrite), so an
interruption (Ctrl-C, SIGTERM) or a full disk leaves no temporary file and no half-written model behind.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import UserError
from ..core.safewrite import atomic, free_bytes, make_folder, nearest_existing, refusal, stage
from ..core.signals import raise_on_signals

# The model writer and the scenario (pydantic, YAML) are imported where the command runs, so that building the
# command line (`pdrepro --help`) stays light.
if TYPE_CHECKING:
    from ..image.offline_model import ModelShape

# Qwen2.5-0.5B-Instruct's values beyond the attention geometry (its config.json): the one-box
# scenario's model, the only one a box without a hub needs.
DEFAULT_VOCAB = 151936
DEFAULT_INTERMEDIATE = 4864
DEFAULT_MAX_POSITIONS = 32768
# What the file system keeps free beyond the estimate: the estimate of the tokenizer is one, and a disk
# filled to its last byte breaks whatever else runs on the box.
DISK_MARGIN = 256 << 20
# The files this command writes into --out (the tokenizer's are whatever its library writes, all tokenizer*).
WRITTEN = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
           "chat_template.jinja")
WHAT = "offline-model"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "offline-model", help="make a random-weight model, tokenizer and dataset for a scenario, without a download",
        description="Writes a model SGLang can load (config.json, model.safetensors in bf16, tokenizer) with the "
                    "scenario's layers, heads and KV heads, and a ShareGPT-shaped dataset of its vocabulary, so the "
                    "one-box check runs on a machine that reaches no model hub. KV sizes and timings are real; the "
                    "outputs are gibberish. Needs numpy, tokenizers and transformers (what SGLang installs). A "
                    "folder that already holds a model, or a dataset file that exists, is refused unless --force; "
                    "a symlink where a file goes is always refused; the sizes are held against the free disk first.")
    p.add_argument("--scenario", default="onebox-qwen25-0.5b", help="scenario name or YAML path (default: %(default)s)")
    p.add_argument("--out", required=True, type=Path, help="model folder to write (give it to --model)")
    p.add_argument("--dataset", required=True, type=Path, help="dataset JSON file to write (give it to --dataset)")
    p.add_argument("--vocab-size", type=int,
                   help=f"default: the scenario's model.geometry.vocab_size, else {DEFAULT_VOCAB}")
    p.add_argument("--intermediate-size", type=int,
                   help=f"default: the scenario's model.geometry.intermediate_size, else {DEFAULT_INTERMEDIATE}")
    p.add_argument("--max-positions", type=int, default=DEFAULT_MAX_POSITIONS, help="default: %(default)s")
    p.add_argument("--conversations", type=int, default=400, help="dataset entries (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="0 to 2^32-1 (default: %(default)s)")
    p.add_argument("--force", action="store_true",
                   help="replace the model files and the dataset this command writes where they already exist "
                        "(never through a symlink, never beside another model's weights)")
    p.set_defaults(func=run)


def _check_out(out: Path, force: bool) -> None:
    """--out may be a new path, an empty or unrelated folder, or (with --force) a model this command made."""
    if os.path.lexists(out) and not out.is_dir():
        raise UserError(f"--out {out}: exists and is not a folder (or is a link to nothing); give a folder path")
    from ..image.offline_model import model_files

    found = model_files(out)
    if found and not force:
        raise UserError(f"--out {out}: already holds a model ({', '.join(found[:4])}); give a new folder, or --force "
                        "to replace the files offline-model writes")
    foreign = [n for n in found if n not in WRITTEN and not n.startswith("tokenizer")]
    if foreign:
        raise UserError(f"--out {out}: holds files of another model ({', '.join(foreign[:4])}) that --force would "
                        "leave beside the new weights; move them away or give a new folder")
    for name in WRITTEN:
        problem = refusal(out / name, WHAT)
        if problem is not None:
            raise problem


def _check_dataset(dataset: Path, out: Path, force: bool) -> None:
    problem = refusal(dataset, WHAT)
    if problem is not None:
        raise problem
    if dataset.exists() and not force:
        raise UserError(f"--dataset {dataset}: already exists; give a new file name, or --force to replace it")
    if dataset.parent.resolve() == out.resolve() and dataset.name in WRITTEN:
        raise UserError(f"--dataset {dataset}: is one of the model's own files; give another name")


def _device(path: Path) -> int | None:
    try:
        return os.stat(nearest_existing(path)).st_dev
    except OSError:
        return None


def _check_disk(out: Path, dataset: Path, shape: ModelShape, conversations: int) -> int:
    from ..image.offline_model import checkpoint_bytes, dataset_bytes, tokenizer_bytes

    """Holds the bytes about to be written against each file system's free space; returns the model's bytes."""
    model = checkpoint_bytes(shape) + tokenizer_bytes(shape.vocab_size)
    data = dataset_bytes(shape.vocab_size, conversations)
    needs = [(out, model + (data if _device(out) == _device(dataset.parent) else 0)), (dataset.parent, data)]
    for folder, need in needs:
        free = free_bytes(folder)
        if free is not None and need + DISK_MARGIN > free:
            raise UserError(f"{folder}: the file system holding it has {free / 1e9:.2f} GB free; offline-model needs "
                            f"{need / 1e9:.2f} GB there (and keeps {DISK_MARGIN >> 20} MiB spare): free space, choose "
                            "another folder, or make a smaller model (--vocab-size, --intermediate-size)")
    return model


def _check_numbers(args) -> None:
    from ..image.offline_model import MAX_CONVERSATIONS

    if not 1 <= args.conversations <= MAX_CONVERSATIONS:
        raise UserError(f"--conversations {args.conversations}: give a number from 1 to {MAX_CONVERSATIONS}")
    if not 0 <= args.seed < 1 << 32:
        raise UserError(f"--seed {args.seed}: give a number from 0 to {(1 << 32) - 1}")


def run(args) -> int:
    from ..image.offline_model import (
        missing_libraries,
        shape_for,
        write_config,
        write_dataset,
        write_safetensors,
        write_tokenizer,
    )
    from ..scenario.model import load_scenario

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
    _check_numbers(args)
    # The option wins, then the scenario's figure, then Qwen2.5-0.5B's.
    vocab = next(v for v in (args.vocab_size, geometry.vocab_size, DEFAULT_VOCAB) if v is not None)
    intermediate = next(v for v in (args.intermediate_size, geometry.intermediate_size, DEFAULT_INTERMEDIATE)
                        if v is not None)
    shape = shape_for(geometry, vocab, intermediate, args.max_positions, args.scenario)
    out, dataset = Path(args.out), Path(args.dataset)
    _check_out(out, args.force)
    _check_dataset(dataset, out, args.force)
    size = _check_disk(out, dataset, shape, args.conversations)
    make_folder(out, "--out")
    make_folder(dataset.parent, "--dataset")
    t0 = time.monotonic()
    # transformers announces on import that it found no PyTorch, which this command does not need.
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    # SIGTERM and SIGHUP end it as Ctrl-C does: the stage and the temporary files go on the way out.
    with raise_on_signals(), atomic(dataset, WHAT) as data, stage(out, WHAT) as staged:
        write_config(staged, shape)
        write_tokenizer(staged, shape.vocab_size, shape.max_positions)
        with open(staged / "model.safetensors", "xb") as weights:  # a fresh private folder: nothing to follow
            write_safetensors(weights, shape.tensors(), args.seed)
        write_dataset(data, shape.vocab_size, args.conversations, args.seed + 1)
    print(f"offline-model: {scenario.name}'s geometry ({shape.layers} layers, {shape.heads} heads, {shape.kv_heads} KV "
          f"heads of {shape.head_dim}), vocabulary {shape.vocab_size}: {size / 1e9:.2f} GB in {out}, dataset "
          f"{dataset} ({args.conversations} conversations), {time.monotonic() - t0:.1f} s")
    return 0
