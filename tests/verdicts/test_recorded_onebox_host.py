"""The one-box proof the bundle ran alone on one H200 (tests/recorded/h200-onebox-host-sglang-0.5.15.post1/,
see its SOURCE): `pdrepro stack up`, the engine ceiling, the sweep with its transport proof, then the
verdicts. These tests hold today's code to what that run showed: its raw files give its table, it is
green under its own scenario for the stated reasons only (TCP allowed, no RDMA device), the processes
it started are what `pdrepro render` prints for the same options, and its ceiling ratios are the report's."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from render_targets import host_commands

from pdrepro.cli import main
from pdrepro.kinds.registry import load_or_analyze
from pdrepro.rundir import RunDir
from pdrepro.scenario.model import load_scenario
from pdrepro.verdicts.gates import NOT_APPLICABLE, evaluate, failed, not_applicable

REPO = Path(__file__).resolve().parents[2]
# The proof run twice on the same H200 the same day: first, and again on the day's final layout.
RUNS = ("h200-onebox-host-sglang-0.5.15.post1", "h200-onebox-host-sglang-0.5.15.post1-rerun")


@pytest.fixture(params=RUNS)
def recorded(request) -> Path:
    return REPO / "tests" / "recorded" / request.param
LENGTHS = (128, 1024, 4096, 16384)
# The site options the proof gave `stack up` (scripts/onebox-host-proof.sh with MODEL=/tmp/model, GPUS=0, TCP=auto
# on a box without RDMA, the SERVER_ARGS it then defaulted to). The scenario is the one the run recorded (RUN_SCENARIO):
# the shipped one has since taken those server flags into launch.extra_server_args.
RUN_SCENARIO = "RUN/scenario.yaml"
STACK_OPTIONS = ["--scenario", RUN_SCENARIO, "--model", "/tmp/model", "--dataset", "/tmp/model/sharegpt.json",
                 "--gpus", "0", "--force-tcp", "--server-arg=--attention-backend triton",
                 "--server-arg=--sampling-backend pytorch", "--server-arg=--grammar-backend none",
                 "--server-arg=--enable-metrics"]


def copy_run(recorded: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "run"
    shutil.copytree(recorded, dest)
    for p in dest.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dest


def _recorded(recorded: Path, name: str) -> dict:
    return json.loads((recorded / name).read_text())


def _judge(run: Path):
    scenario = load_scenario(run / "scenario.yaml")
    summary = load_or_analyze(RunDir(run), scenario)
    return summary, evaluate(summary, scenario)


def test_the_raw_files_give_the_recorded_rows_to_the_digit(recorded, tmp_path):
    summary, _ = _judge(copy_run(recorded, tmp_path))
    recorded = _recorded(recorded, "summary.json")["rows"]
    assert [r["prompt_len"] for r in summary["rows"]] == list(LENGTHS)
    for fresh, old in zip(summary["rows"], recorded):
        assert {k: fresh.get(k) for k in old} == old
        assert fresh["logged_requests"] == 10 and fresh["transfer_samples"] == 10


def test_green_under_its_own_scenario_with_only_transport_and_witness_not_applicable(recorded, tmp_path, capsys):
    run = copy_run(recorded, tmp_path)
    summary, results = _judge(run)
    assert summary["transport"] == "tcp"
    assert summary["transport_evidence"]["rdma_devices"]["found"] is False
    assert failed(results) == []
    assert sorted((r.name, r.prompt_len) for r in not_applicable(results)) == sorted(
        [("nic_witness", L) for L in LENGTHS] + [("transport", None)])
    assert all(NOT_APPLICABLE in r.detail for r in not_applicable(results))
    # Every length's requests completed, were logged, and carried the model's KV size.
    for L in LENGTHS:
        for name in ("completed", "requests_logged", "kv_size_match", "ttft_covers_transfer"):
            assert any(r.name == name and r.prompt_len == L and r.passed for r in results), (name, L)
    assert main(["check", str(run)]) == 0
    out, err = capsys.readouterr()
    assert re.search(r"^\d+ passed, 0 failed, 5 not applicable$", out, re.M)
    # The pins differ (release wheels, not the pinned builds): said, as a warning under pins_match: warn.
    assert "WARN" in out and "mooncake-transfer-engine-cuda13 0.3.12.post1" in out


def test_the_same_files_under_the_published_transport_policy_fail(recorded, tmp_path):
    run = copy_run(recorded, tmp_path)
    scenario_file = run / "scenario.yaml"
    text = scenario_file.read_text()
    assert "transport: any" in text
    scenario = load_scenario(run / "scenario.yaml").model_copy(update={"transport": "rdma"})
    summary = load_or_analyze(RunDir(run), scenario)
    names = {(r.name, r.prompt_len) for r in failed(evaluate(summary, scenario))}
    assert {("transport", None)} | {("nic_witness", L) for L in LENGTHS} <= names


def test_the_gates_pass_with_the_not_applicable_ones_skipped_not_passed(recorded, tmp_path):
    run = copy_run(recorded, tmp_path)
    proc = subprocess.run([sys.executable, "-m", "pytest", "repro/", "--run-dir", str(run), "-p", "no:cacheprovider",
                           "-q", "--no-cov", "-p", "no:xdist"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    cases = list(ET.parse(run / "junit.xml").getroot().iter("testcase"))
    skipped = [c for c in cases if c.find("skipped") is not None]
    assert not [c for c in cases if c.find("failure") is not None or c.find("error") is not None]
    assert sorted(c.get("name") for c in skipped) == sorted(
        [f"test_nics_witness_the_kv[L{L}]" for L in LENGTHS] + ["test_transport_proven", "test_pins_match"])
    assert len(cases) - len(skipped) >= 30


def _rendered(tmp_path: Path, recorded: Path) -> dict[str, tuple[dict[str, str], list[str]]]:
    # render checks the model folder and dataset exist: stand them up here and read the H200's paths back.
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "sharegpt.json").write_text("[]")
    options = [str(model) if o == "/tmp/model" else str(model / "sharegpt.json") if o == "/tmp/model/sharegpt.json"
               else str(recorded / "scenario.yaml") if o == RUN_SCENARIO else o for o in STACK_OPTIONS]
    out = tmp_path / "rendered"
    assert main(["render", "--target", "onebox", "--launcher", "host", *options, "--out", str(out)]) == 0
    return host_commands((out / "commands.txt").read_text().replace(str(model), "/tmp/model"))


def test_what_stack_up_started_is_what_render_prints_for_the_same_options(recorded, tmp_path):
    record = _recorded(recorded, "stack.json")
    rendered = _rendered(tmp_path, recorded)
    assert [p["name"] for p in record["processes"]] == ["prefill-0", "decode-0", "router"]
    for proc in record["processes"]:
        env, argv = rendered[proc["role"]]
        # The recorded argv starts with the H200's Python; render prints this machine's.
        assert proc["argv"][1:] == argv[1:], proc["name"]
        assert {k: v for k, v in proc["env"].items() if k != "PYTHONUNBUFFERED"} == env, proc["name"]
    prefill = record["processes"][0]
    assert prefill["env"]["CUDA_VISIBLE_DEVICES"] == "0" == record["processes"][1]["env"]["CUDA_VISIBLE_DEVICES"]
    assert prefill["argv"][prefill["argv"].index("--mem-fraction-static") + 1] == "0.3"
    assert record["packages"]["sglang"] == "0.5.15.post1"
    assert record["packages"]["mooncake-transfer-engine-cuda13"] == "0.3.12.post1"


def test_the_engine_ceiling_ratios_are_the_reports(recorded, tmp_path, capsys):
    run = copy_run(recorded, tmp_path)
    summary, _ = _judge(run)
    ceiling = json.loads((run / "engine-ceiling" / "result.json").read_text())
    assert ceiling and all(r.get("verified", True) for r in ceiling.get("rows", []))
    ratios = {}
    for line in (recorded / "console" / "check.out").read_text().splitlines():
        m = re.match(r"engine ceiling: length (\d+): ([\d.]+) GB/s per request, the engine alone ([\d.]+) GB/s "
                     r"\((\w+)\): ratio ([\d.]+)", line)
        if m:
            ratios[int(m.group(1))] = float(m.group(5))
    assert sorted(ratios) == list(LENGTHS)
    assert main(["check", str(run)]) == 0
    fresh = capsys.readouterr().out
    for L, ratio in ratios.items():
        assert f"engine ceiling: length {L}: " in fresh and f"ratio {ratio:.2f}" in fresh


@pytest.mark.parametrize("role", ["prefill", "decode"])
def test_the_servers_logs_hold_every_request_and_say_tcp(recorded, role):
    text = (recorded / "logs" / f"{role}.log").read_text()
    assert "MC_FORCE_TCP is set" in text
    if role == "prefill":
        lens = re.findall(r"ReqTimeStats\(rid=(?!HEALTH)\w+, bootstrap_room=(?!0,)\d+, input_len=(\d+)", text)
        # 10 measured + 1 bench warm-up per length: the log kept growing while the sweep read it in place.
        assert {L: lens.count(str(L)) for L in LENGTHS} == {L: 11 for L in LENGTHS}
