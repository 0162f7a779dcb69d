import json

import pytest

from pdrepro.core.errors import UserError
from pdrepro.core.units import human_bytes
from pdrepro.scenario.kvsize import Geometry, geometry_from_config, kv_bytes_per_token
from pdrepro.scenario.model import load_scenario

QWEN3_235B = Geometry(num_hidden_layers=94, num_attention_heads=64, num_key_value_heads=4, head_dim=128)


def test_qwen3_235b_tp8_matches_published_kv_column():
    per_token = kv_bytes_per_token(QWEN3_235B, "bfloat16", 8)
    assert per_token == 385_024
    published = load_scenario("h20-qwen3-235b-1p1d").reference.rows
    for row in published:
        assert human_bytes(row.prompt_len * per_token) == row.kv_size


def test_kv_heads_split_when_more_heads_than_ranks():
    geometry = Geometry(num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4, hidden_size=3584)
    # head_dim derived from hidden_size / heads = 128; 4 heads split over TP 2 and 4.
    assert kv_bytes_per_token(geometry, "float16", 2) == 28 * 2 * 4 * 128 * 2
    assert kv_bytes_per_token(geometry, "float16", 4) == 28 * 2 * 4 * 128 * 2
    # TP 8 > 4 heads: each rank holds a copy of one head.
    assert kv_bytes_per_token(geometry, "fp8", 8) == 28 * 2 * 8 * 128 * 1


def test_mla_latent_is_replicated_on_every_rank(tmp_path):
    config = {"num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
              "kv_lora_rank": 512, "qk_rope_head_dim": 64, "hidden_size": 7168}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    geometry = geometry_from_config(path)
    assert geometry.is_mla
    assert kv_bytes_per_token(geometry, "bf16", 8) == 61 * (512 + 64) * 2 * 8


def test_uneven_split_is_refused():
    geometry = Geometry(num_hidden_layers=2, num_key_value_heads=6, head_dim=64)
    with pytest.raises(UserError, match="do not split evenly"):
        kv_bytes_per_token(geometry, "bf16", 4)


def test_config_without_layers_is_refused(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("{}")
    with pytest.raises(UserError, match="num_hidden_layers"):
        geometry_from_config(path)


def test_small_sizes_keep_their_figure():
    assert human_bytes(524_288) == "0.52 MB"
    assert human_bytes(49_283_072) == "49 MB"


def test_the_dtype_type_names_every_dtype_with_a_size():
    # The scenario's dtype field is the Literal; the sizes are the dict: one may not gain a name the other lacks.
    import typing

    from pdrepro.scenario.kvsize import DTYPE_BYTES, DType
    assert list(typing.get_args(DType)) == sorted(DTYPE_BYTES)
