"""`pdrepro offline-model`: the model it writes has the scenario's KV geometry, a loadable
checkpoint layout, and a tokenizer and dataset the bench client can turn into prompts."""

from __future__ import annotations

import json
import struct

import pytest
from safetensors import safe_open
from transformers import AutoConfig, AutoTokenizer

from pdrepro.cli import main
from pdrepro.image.offline_model import ModelShape
from pdrepro.scenario.kvsize import geometry_from_config, kv_bytes_per_token
from pdrepro.scenario.model import load_scenario

SMALL = ["--vocab-size", "1000", "--intermediate-size", "64", "--max-positions", "2048", "--conversations", "20"]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("offline")
    rc = main(["offline-model", "--out", str(root / "model"), "--dataset", str(root / "data.json"), *SMALL])
    assert rc == 0
    return root


def test_the_config_carries_the_scenarios_kv_geometry(made):
    scenario = load_scenario("onebox-qwen25-0.5b")
    dtype = scenario.model.dtype
    assert kv_bytes_per_token(geometry_from_config(made / "model" / "config.json"), dtype, 1) == \
        kv_bytes_per_token(scenario.model.geometry, dtype, 1)
    cfg = AutoConfig.from_pretrained(made / "model")
    assert (cfg.model_type, cfg.vocab_size, cfg.tie_word_embeddings) == ("qwen2", 1000, True)


def test_the_checkpoint_holds_every_tensor_of_a_tied_qwen2_in_bf16(made):
    path = made / "model" / "model.safetensors"
    with path.open("rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
    header.pop("__metadata__")
    shape = ModelShape(24, 14, 2, 64, 1000, 64, 2048)
    assert {n: tuple(v["shape"]) for n, v in header.items()} == dict(shape.tensors())
    assert {v["dtype"] for v in header.values()} == {"BF16"}
    assert "lm_head.weight" not in header
    end = max(v["data_offsets"][1] for v in header.values())
    assert path.stat().st_size == 8 + size + end
    with safe_open(str(path), "np") as f:  # the library's own reader accepts the layout
        assert set(f.keys()) == set(header)


def test_norm_weights_are_ones_and_the_rest_is_random(made):
    path = made / "model" / "model.safetensors"
    raw = path.read_bytes()
    size = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + size])
    base = 8 + size

    def values(name):
        a, b = header[name]["data_offsets"]
        return set(struct.unpack(f"<{(b - a) // 2}H", raw[base + a:base + b]))

    assert values("model.norm.weight") == {0x3F80}
    assert len(values("model.layers.0.self_attn.k_proj.weight")) > 1000


def test_the_dataset_encodes_to_prompts_through_the_bench_clients_tokenizer(made):
    tok = AutoTokenizer.from_pretrained(made / "model")  # what the bench client does
    assert len(tok) == 1000
    data = json.loads((made / "data.json").read_text())
    assert len(data) == 20
    first = data[0]["conversations"][0]["value"]
    assert len(tok.encode(first, add_special_tokens=False)) >= len(first.split())
    assert {turn["from"] for turn in data[0]["conversations"]} == {"human", "gpt"}


def test_a_scenario_of_another_model_family_is_refused_in_one_line(tmp_path, capsys):
    rc = main(["offline-model", "--scenario", "h20-qwen3-235b-1p1d", "--out", str(tmp_path / "m"),
               "--dataset", str(tmp_path / "d.json"), *SMALL])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "offline-model" in err
    assert not (tmp_path / "m" / "model.safetensors").exists()


def test_a_vocabulary_too_small_for_the_byte_alphabet_is_refused(tmp_path, capsys):
    rc = main(["offline-model", "--out", str(tmp_path / "m"), "--dataset", str(tmp_path / "d.json"),
               "--vocab-size", "100"])
    assert rc == 2 and "byte alphabet" in capsys.readouterr().err
