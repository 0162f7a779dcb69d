"""Sizes, pattern and checksum logic of the smoke, on the host (no Mooncake needed)."""

import ctypes
import json

import pytest

from pdrepro.core.errors import UserError
from pdrepro.core.units import MiB
from pdrepro.scenario.model import load_scenario
from pdrepro.scenario.smokeplan import PlanRow, SmokePlan, blocks, digest, expected_digests, make_plan, pattern
from pdrepro.smoke import measure
from pdrepro.smoke.memory import Buffer


@pytest.fixture(scope="module")
def scenario():
    return load_scenario("smoke-tcp")


def test_sizes_follow_the_kv_model_of_the_smoke_geometry(scenario):
    plan = make_plan(scenario, repeats=3)
    # 8 layers x (K,V) x 2 KV heads x 64 dims x 2 B (bf16) at TP 1
    assert scenario.kv_bytes_per_token == 4096
    assert [r.prompt_len for r in plan.rows] == [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768]
    assert [r.kv_bytes for r in plan.rows] == [r.prompt_len * 4096 for r in plan.rows]
    assert plan.rows[0].kv_bytes == 524_288
    assert plan.max_bytes == 134_217_728  # 32K tokens: 134 MB, small enough for two copies on a laptop
    assert plan.seed == scenario.sweep.seed


def test_subset_of_lengths_is_sorted_and_checked(scenario):
    plan = make_plan(scenario, prompt_lens=[4096, 128])
    assert [r.prompt_len for r in plan.rows] == [128, 4096]
    with pytest.raises(UserError, match="prompt length 100 is not in scenario smoke-tcp"):
        make_plan(scenario, prompt_lens=[100])


def test_a_transfer_too_big_for_a_laptop_is_refused(scenario):
    with pytest.raises(UserError, match="exceeds the .* cap; use a smaller model geometry"):
        make_plan(scenario, max_transfer_bytes=100 * MiB)


def test_blocks_below_one_mib_are_refused(scenario):
    with pytest.raises(UserError, match="below 1 MiB"):
        make_plan(scenario, block_bytes=512 * 1024)


def test_blocks_cover_the_buffer_exactly():
    parts = blocks(10 * MiB + 5, 4 * MiB)
    assert parts == [(0, 4 * MiB), (4 * MiB, 4 * MiB), (8 * MiB, 2 * MiB + 5)]
    assert sum(n for _, n in parts) == 10 * MiB + 5
    assert blocks(MiB // 2, 4 * MiB) == [(0, MiB // 2)]


def test_plan_survives_the_trip_through_the_environment(scenario):
    plan = make_plan(scenario, prompt_lens=[128, 1024], repeats=2)
    assert SmokePlan.from_json(plan.to_json()) == plan
    with pytest.raises(UserError, match="SMOKE_PLAN is not a valid smoke plan"):
        SmokePlan.from_json(json.dumps({"rows": [{"prompt_len": 1}]}))


def test_pattern_is_deterministic_and_seed_dependent():
    assert pattern(42, 4096) == pattern(42, 4096)
    assert pattern(42, 4096) != pattern(43, 4096)
    assert pattern(42, 8192)[:4096] == pattern(42, 4096)


def test_expected_digests_are_of_prefixes():
    plan = SmokePlan((PlanRow(1, MiB), PlanRow(2, 2 * MiB)), repeats=1, block_bytes=MiB, seed=7)
    want = expected_digests(plan)
    data = pattern(7, 2 * MiB)
    assert want == {1: digest(data[:MiB]), 2: digest(data)}
    assert want[1] != want[2]


def _fill(buf: Buffer, data: bytes, corrupt_at: int | None = None) -> float:
    buf.view[: len(data)] = data
    if corrupt_at is not None:
        buf.view[corrupt_at] ^= 0xFF
    return 0.001


def _one_way(kind, nbytes, repeats, buf, want, once):
    return measure.measure_interleaved(nbytes, repeats, buf, want, {kind: once})[kind]


def test_measure_verifies_every_transfer():
    n = MiB
    data = pattern(1, n)
    buf = Buffer(n)
    good = _one_way("mooncake", n, 3, buf, digest(data), lambda: _fill(buf, data))
    assert good["verified"] and good["failed_checks"] == 0
    assert len(good["ms"]) == 3 and good["ms_median"] == pytest.approx(1.0)


def test_measure_catches_one_corrupted_byte():
    n = MiB
    data = pattern(1, n)
    buf = Buffer(n)
    calls = []

    def once():
        calls.append(1)
        # The third timed transfer flips one byte near the end.
        return _fill(buf, data, corrupt_at=n - 3 if len(calls) == 4 else None)

    result = _one_way("mooncake", n, 3, buf, digest(data), once)
    assert not result["verified"] and result["failed_checks"] == 1


def test_a_transfer_that_moves_nothing_fails_the_check():
    n = MiB
    data = pattern(1, n)
    buf = Buffer(n)
    buf.view[:n] = data  # the right bytes are there before the first transfer
    result = _one_way("socket", n, 2, buf, digest(data), lambda: 0.001)
    assert not result["verified"]
    assert bytes(buf.view[:16]) == bytes(16)


def test_buffer_address_is_the_memory_the_engine_sees():
    buf = Buffer(4096)
    ctypes.memmove(buf.addr, b"kvkv", 4)
    assert bytes(buf.view[:4]) == b"kvkv"
    buf.zero(4)
    assert bytes(buf.view[:4]) == bytes(4)


def test_interleaved_ways_take_turns_and_are_verified_separately():
    n = MiB
    data = pattern(3, n)
    buf = Buffer(n)
    order = []

    def good():
        order.append("mooncake")
        return _fill(buf, data)

    def broken():
        order.append("socket")
        return _fill(buf, data, corrupt_at=0)

    out = measure.measure_interleaved(n, 2, buf, digest(data), {"mooncake": good, "socket": broken})
    assert order == ["mooncake", "socket"] * 3  # warm-up + 2 timed, alternating
    assert out["mooncake"]["verified"] and len(out["mooncake"]["ms"]) == 2
    assert not out["socket"]["verified"] and out["socket"]["failed_checks"] == 3
