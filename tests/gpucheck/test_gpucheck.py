"""pdrepro gpu-check: sizes, the byte pattern and its verification, errors, and
a real run through the Mooncake Transfer Engine in the smoke image (host memory;
the GPU run is recorded in tests/recorded/gpu-check/)."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml
from clihelp import assert_one_line_error, pdrepro, pdrepro_process
from smokeimage import REPO, smoke_image

from pdrepro.commands.gpu_check import _gpus, _sizes
from pdrepro.gpucheck import pattern
from pdrepro.gpucheck.buffers import HostBuffer
from pdrepro.rundir import engineceiling
from pdrepro.scenario.model import load_scenario

MiB = 2**20


def _filled(nbytes: int, seed: int = 7) -> HostBuffer:
    buf = HostBuffer(nbytes)
    for off, data in pattern.chunks(seed, nbytes):
        buf.write(off, data)
    return buf


def test_one_prefill_rank_at_32k_tokens_is_an_eighth_of_the_published_kv():
    published = yaml.safe_load((REPO.parent / "shared" / "reference" / "h20-qwen3-235b-1p1d.yaml").read_text()) \
        if (REPO.parent / "shared" / "reference" / "h20-qwen3-235b-1p1d.yaml").exists() else None
    sizes = dict(_sizes(load_scenario("h20-qwen3-235b-1p1d"), (32768,)))
    assert round(sizes[32768] / 1e9, 2) == 1.58
    if published is not None:
        text = json.dumps(published)
        assert "12.62" in text  # the table's 32K size, which TP 8 ranks share
    assert abs(sizes[32768] * 8 / 1e9 - 12.62) < 0.02


def test_pattern_covers_exactly_the_size_and_every_block_differs():
    nbytes = 3 * MiB + 123
    pieces = list(pattern.chunks(1, nbytes, chunk_bytes=2 * MiB))
    assert sum(len(d) for _, d in pieces) == nbytes
    data = b"".join(d for _, d in pieces)
    blocks = {data[i:i + MiB] for i in range(0, 3 * MiB, MiB)}
    assert len(blocks) == 3


def test_a_buffer_holding_the_pattern_has_its_digest():
    buf = _filled(5 * MiB)
    assert buf.digest(5 * MiB) == pattern.digest(7, 5 * MiB)
    assert buf.digest(2 * MiB) == pattern.digest(7, 2 * MiB)


def test_one_flipped_byte_or_two_swapped_blocks_change_the_digest():
    good = pattern.digest(7, 4 * MiB)
    buf = _filled(4 * MiB)
    buf.write(3 * MiB + 17, b"\xff" if buf._mem[3 * MiB + 17] != 0xFF else b"\x00")
    assert buf.digest(4 * MiB) != good
    swapped = _filled(4 * MiB)
    first, second = bytes(swapped._mem[:MiB]), bytes(swapped._mem[MiB:2 * MiB])
    swapped.write(0, second)
    swapped.write(MiB, first)
    assert swapped.digest(4 * MiB) != good


def test_a_zeroed_buffer_does_not_pass():
    buf = _filled(2 * MiB)
    buf.zero()
    assert buf.digest(2 * MiB) != pattern.digest(7, 2 * MiB)


@pytest.mark.parametrize("args, needle", [
    (["--gpus", "0,1,2"], "--gpus"),
    (["--gpus", "0,0,1"], "--gpus"),
    (["--layouts", "one,rows"], "--layouts"),
    (["--layouts", "one,one"], "--layouts"),
    (["--gpus", "one"], "--gpus"),
    (["--repeats", "0"], "--repeats"),
    (["--prompt-lens", "a,b"], "--prompt-lens"),
    (["--scenario", "no-such-scenario"], "no-such-scenario"),
])
def test_bad_arguments_are_one_line_errors(args, needle):
    assert_one_line_error(pdrepro("gpu-check", *args), "gpu-check", needle)


def test_without_the_engine_the_side_says_where_to_run_it(tmp_path):
    # This test environment has no Mooncake wheel: the failure a user sees on a
    # host without the GPU image.
    try:
        import mooncake.engine  # noqa: F401
        pytest.skip("the Mooncake engine is importable here")
    except ImportError:
        pass
    res = pdrepro_process("gpu-check", "--prompt-lens", "128", "--out", tmp_path / "out", "--timeout", "60")
    assert_one_line_error(res, "gpu-check", "not importable", "GPU image")
    assert (tmp_path / "out" / "target.log").exists()


def test_without_a_cuda_runtime_the_error_names_the_fix(monkeypatch, tmp_path):
    from pdrepro.core.errors import UserError
    from pdrepro.gpucheck import cudart
    monkeypatch.setenv("PDREPRO_CUDART", str(tmp_path / "libcudart.so.13"))
    with pytest.raises(UserError, match="PDREPRO_CUDART"):
        cudart.load()


def test_host_memory_run_moves_verified_bytes_through_mooncake(tmp_path):
    # Reads: the smoke image's PyPI engine (0.3.11.post1) acknowledges a TCP
    # write before the bytes land (unacknowledged framing, fixed upstream on
    # 2026-07-13, before the pin), so a write check there fails at random --
    # which is what the check is for, but not what this test is about.
    image = smoke_image()
    out = tmp_path / "gc"
    out.mkdir()
    proc = subprocess.run(
        ["docker", "run", "--rm", "-v", f"{out}:/out", "--ulimit", "memlock=8388608:8388608", image,
         "pdrepro", "gpu-check", "--memory", "host", "--transport", "tcp", "--scenario", "smoke-tcp",
         "--prompt-lens", "128,32768", "--repeats", "2", "--block-mib", "16", "--direction", "read",
         "--layouts", "blocks,layers", "--gpus", "0", "--out", "/out"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((out / "result.json").read_text())
    assert result["ok"] and result["transport"] == "tcp"
    assert [(r["prompt_len"], r["layout"]) for r in result["rows"]] == [
        (128, "blocks"), (128, "layers"), (32768, "blocks"), (32768, "layers")]
    assert all(r["verified"] == 2 and len(r["seconds"]) == 2 and r["median_GB_s"] > 0 for r in result["rows"])
    assert result["rows"][2]["nbytes"] == load_scenario("smoke-tcp").kv_bytes(32768)
    assert "all bytes verified" in proc.stdout
    # The same figures as the engine's ceiling per length, as the report reads them from RUN/engine-ceiling.json.
    entries = json.loads((out / engineceiling.FILE_NAME).read_text())
    layers = 2 * load_scenario("smoke-tcp").geometry.num_hidden_layers
    assert entries["128/blocks"]["blocks"] == 1 and entries["32768/layers"]["blocks"] == layers
    found, _, name = engineceiling.load_ceiling(out)
    assert name == engineceiling.FILE_NAME
    for r in result["rows"]:
        assert found[r["prompt_len"]][r["layout"]].GB_s == pytest.approx(r["median_GB_s"])


RECORDED = REPO / "tests" / "recorded" / "gpu-check"


def _recorded(direction: str) -> dict:
    text = (RECORDED / f"h200x2-{direction}-result.json.txt").read_text()
    return json.loads("\n".join(l for l in text.splitlines() if not l.startswith("#")))


@pytest.mark.parametrize("direction", ["write", "read"])
def test_the_recorded_h200_run_moved_what_this_code_sizes_and_verified_it(direction):
    result = _recorded(direction)
    sizes = dict(_sizes(load_scenario("h20-qwen3-235b-1p1d"), None))
    assert result["direction"] == direction and result["memory"] == "gpu" and result["transport"] == "tcp"
    assert {r["prompt_len"]: r["nbytes"] for r in result["rows"]} == sizes
    assert round(max(sizes.values()) / 1e9, 2) == 1.58  # 1,577,058,304 B: one TP rank at 32K tokens
    for row in result["rows"]:
        assert row["verified"] == result["repeats"] == len(row["seconds"]) and not row["failures"]
        from statistics import median
        assert row["median_GB_s"] == pytest.approx(row["nbytes"] / median(row["seconds"]) / 1e9)
    assert result["ok"]


def test_the_recorded_console_shows_the_stage_wheel_and_cuda_13():
    text = (RECORDED / "h200x2-stage-wheel-console.txt").read_text()
    assert "mooncake=6e3a11b97a3ece7f7734cca4374406be2a6a930b" in text
    assert "Shared library: [libcudart.so.13]" in text
    assert text.count("all bytes verified") == 2
    assert "Data validation passed" in text


def _recorded_pypi(direction: str) -> dict:
    text = (RECORDED / f"h200x2-pypi-{direction}-result.json.txt").read_text()
    return json.loads("\n".join(l for l in text.splitlines() if not l.startswith("#")))


def test_pypis_wheel_delivered_a_write_late_and_the_check_failed_it():
    # The engine of PyPI's 0.3.11.post1 acknowledges a TCP write before the
    # bytes land; the recorded run caught one such write on the GPU pair.
    write, read = _recorded_pypi("write"), _recorded_pypi("read")
    assert not write["ok"]
    bad = [(r["prompt_len"], f) for r in write["rows"] for f in r["failures"]]
    assert bad and all("received bytes differ" in f for _, f in bad)
    assert read["ok"] and all(not r["failures"] for r in read["rows"])


def test_rdma_asked_but_tcp_used_is_refused_with_the_reason():
    from pdrepro.gpucheck.run import Settings, _transport_problem
    from pdrepro.parsers.mooncake_log import detect
    settings = Settings(sizes=((128, MiB),), repeats=1, block_bytes=MiB, gpus=(0, 1), memory="gpu",
                        transport="rdma", direction="write", seed=0, timeout_s=10, out=REPO)
    # Engine start-up lines as Mooncake prints them with no usable HCA.
    tcp_only = ["I1130 19:05:54.661738   857 tcp_transport.cpp:917] TcpTransport: listen on port 16045"]
    problem = _transport_problem(settings, detect(tcp_only))
    assert problem and "RDMA was requested" in problem and "tcp" in problem
    assert _transport_problem(settings, detect([])).startswith("cannot tell")


def test_an_out_folder_that_cannot_be_made_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = pdrepro("gpu-check", "--out", blocker / "sub")
    assert_one_line_error(res, "gpu-check", "--out")


@pytest.mark.parametrize("text, gpus", [("0", (0, 0)), ("3,3", (3, 3)), ("0,1", (0, 1)), (" 2 , 5 ", (2, 5))])
def test_one_gpu_id_puts_both_sides_on_it(text, gpus):
    assert _gpus(text) == gpus


def _settings(**kw):
    from pdrepro.gpucheck.run import Settings
    base = dict(sizes=((128, 1572864), (4096, 50331648)), repeats=2, block_bytes=16 * MiB, gpus=(0, 0), memory="gpu",
                transport="tcp", direction="write", seed=0, timeout_s=10, out=REPO, layouts=("one", "layers"), layers=24)
    base.update(kw)
    return Settings(**base)


def test_the_layouts_cut_one_request_as_the_recorded_ceiling_did():
    # ceiling.py on the H200: the whole request in one block, and 48 K/V blocks (24 layers) in one batch.
    s = _settings()
    assert s.layout_block_bytes("one", 50331648) == 50331648
    assert 50331648 / s.layout_block_bytes("layers", 50331648) == 48
    assert s.layout_block_bytes("blocks", 50331648) == 16 * MiB


def test_the_ceiling_file_holds_the_verified_layouts_as_the_report_reads_them(tmp_path):
    from pdrepro.gpucheck.run import Row, ceiling_entries
    rows = [Row(128, 1572864, [0.001, 0.002], 2, layout="one"), Row(128, 1572864, [0.004, 0.004], 2, layout="layers",
                                                                   blocks=48),
            Row(4096, 50331648, [0.03, 0.03], 2, layout="one"),
            Row(4096, 50331648, [0.001, 0.001], 1, ["transfer 2: received bytes differ"], layout="layers", blocks=48)]
    entries = ceiling_entries(rows)
    # A layout whose bytes did not all arrive is no ceiling.
    assert sorted(entries) == ["128/layers", "128/one", "4096/one"]
    assert entries["128/layers"]["blocks"] == 48 and entries["128/one"]["median_ms"] == pytest.approx(1.5)
    (tmp_path / engineceiling.FILE_NAME).write_text(json.dumps(entries))
    found, transport, name = engineceiling.load_ceiling(tmp_path)
    assert name == engineceiling.FILE_NAME and transport is None
    assert found[128]["one"].GB_s == pytest.approx(1572864 / 0.0015 / 1e9)
    assert set(found[4096]) == {"one"}


def test_gpu_checks_result_names_each_layout_for_the_report(tmp_path):
    from dataclasses import asdict

    from pdrepro.gpucheck.run import Row
    rows = [Row(4096, 50331648, [0.03] * 2, 2, layout="one"), Row(4096, 50331648, [0.02] * 2, 2, layout="layers", blocks=48),
            Row(4096, 50331648, [0.04] * 2, 2)]
    folder = tmp_path.joinpath(*engineceiling.GPU_CHECK_RESULT).parent
    folder.mkdir()
    folder.joinpath("result.json").write_text(json.dumps({
        "transport": "tcp", "block_bytes": 64 * MiB, "rows": [{**asdict(r), "median_GB_s": r.median_GB_s} for r in rows]}))
    found, transport, _ = engineceiling.load_ceiling(tmp_path)
    assert transport == "tcp" and set(found[4096]) == {"one", "layers", "blocks of 64 MiB"}
    assert found[4096]["layers"].GB_s == pytest.approx(50331648 / 0.02 / 1e9)
