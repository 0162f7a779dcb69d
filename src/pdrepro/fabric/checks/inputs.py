"""Input checks: the model directory and the dataset file the run mounts."""

from __future__ import annotations

import json

from .base import FAIL, PASS, WARN, Check, Context, Facts


def check_model(ctx: Context, f: Facts) -> list[Check]:
    if ctx.model is None:
        if ctx.role:
            return [Check("model", WARN, "not checked", "pass --model DIR (the directory mounted into the servers)")]
        return []
    cfg = ctx.model / "config.json"
    if not ctx.model.is_dir():
        return [Check("model", FAIL, f"{ctx.model} is not a directory", "download the model weights there, or fix the path")]
    try:
        config = json.loads(cfg.read_text())
    except FileNotFoundError:
        return [Check("model", FAIL, f"{cfg} missing",
                      "point --model at the Hugging Face model directory (it holds config.json)")]
    except (OSError, ValueError) as exc:
        return [Check("model", FAIL, f"{cfg} unreadable: {exc}", "re-download the model's config.json")]
    detail = f"{ctx.model}: {config.get('architectures', ['?'])[0]}, {config.get('num_hidden_layers', '?')} layers"
    weights = list(ctx.model.glob("*.safetensors"))
    detail += f", {len(weights)} safetensors files"
    if ctx.scenario is not None and ctx.scenario.model.geometry is not None:
        want = ctx.scenario.model.geometry
        diffs = [f"{k} {config.get(k)} != {getattr(want, k)}" for k in
                 ("num_hidden_layers", "num_key_value_heads", "head_dim")
                 if getattr(want, k) is not None and config.get(k) is not None and config.get(k) != getattr(want, k)]
        if diffs:
            # A node with a role serves this model: other geometry moves other KV bytes than the scenario's, so
            # its figures cannot be set beside the scenario's reference. Without a role it is only a note.
            return [Check("model", ctx.need, detail + f"; differs from scenario {ctx.scenario.name}: " + ", ".join(diffs),
                          "KV sizes in the report follow the scenario: use the scenario's model or a scenario for this one")]
    if not weights:
        return [Check("model", WARN, detail, "the weights (*.safetensors) are missing: finish the download")]
    return [Check("model", PASS, detail)]


def check_dataset(ctx: Context, f: Facts) -> list[Check]:
    if ctx.dataset is None:
        if ctx.role == "prefill":
            return [Check("dataset", WARN, "not checked", "pass --dataset FILE (the ShareGPT JSON the bench client reads)")]
        return []
    fix = ("the bench client downloads the dataset from a hub when the path is not a file, which fails offline: "
           "download ShareGPT_V3_unfiltered_cleaned_split.json and mount it")
    if not ctx.dataset.is_file():
        return [Check("dataset", FAIL, f"{ctx.dataset} is not a file", fix)]
    with ctx.dataset.open("rb") as fh:
        head = fh.read(64).lstrip()
    if not head.startswith(b"["):
        return [Check("dataset", FAIL, f"{ctx.dataset} does not start like a JSON list", fix)]
    return [Check("dataset", PASS, f"{ctx.dataset}: {ctx.dataset.stat().st_size / 1e6:.1f} MB")]
