"""`pdrepro diagnose` on every run recorded on the H200 (tests/recorded/h200-*), each a read-only copy: the
Mooncake-over-TCP runs name TCP as the first cause with the very log lines that say so, at their numbers; the
runs whose logs state no transport leave it unknown; what the runs hold no record of (the nodes' records, the
engine alone where it was not measured) is unknown, never guessed; nothing in a run is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from clihelp import pdrepro
from diagnosisrun import cited_lines_exist, diagnose_json, names, read_only

from pdrepro.diagnosis.causes.registry import names as cause_names

RECORDED = Path(__file__).resolve().parents[1] / "recorded"
AB = "h200-ab-mooncake-tcp-vs-nixl-sglang-0.5.15.post1/ab"
TUNE = "h200-tune-0.5b-mooncake-tcp-sglang-0.5.15.post1/tune"
LOAD = "h200-load-0.5b-mooncake-tcp-sglang-0.5.15.post1/load"
ONEBOX = ("h200-onebox-sglang-0.5.15.post1", "h200-onebox-host-sglang-0.5.15.post1",
          "h200-onebox-host-sglang-0.5.15.post1-rerun")
EVERY = [AB, f"{AB}/mooncake_tcp", f"{AB}/nixl", "h200-ab-mooncake-tcp-vs-nixl-sglang-0.5.15.post1/first-session",
         "h200-compare-7b-sglang-0.5.15.post1/cmp", "h200-compare-stacks-7b-sglang-0.5.15.post1", LOAD, TUNE,
         f"{TUNE}/s3", *ONEBOX, "h200-onebox-nixl-and-mooncake-sglang-0.5.15.post1",
         "h200-onebox-nixl-and-mooncake-sglang-0.5.15.post1/nixl"]
# The runs whose Mooncake engine logged TCP: the first cause, and the share of the whole gap.
MOONCAKE_TCP = [f"{AB}/mooncake_tcp", TUNE, LOAD, f"{TUNE}/s3", *ONEBOX,
                "h200-onebox-nixl-and-mooncake-sglang-0.5.15.post1"]


@pytest.fixture
def diagnosed(tmp_path):
    copies = iter(range(100))

    def run(folder: str, *args: str):
        with read_only(RECORDED / folder, tmp_path / f"run{next(copies)}") as copy:
            d = diagnose_json(copy, *args)
            return d, cited_lines_exist(copy, d)
    return run


@pytest.mark.parametrize("folder", EVERY)
def test_every_recorded_run_is_diagnosed_every_cause_answered_once(diagnosed, folder):
    d, _ = diagnosed(folder)
    answered = names(d.causes) + names(d.unknown) + names(d.cleared)
    assert sorted(answered) == sorted(cause_names())  # each cause once: found, unknown or ruled out
    assert [c.share for c in d.causes] == sorted((c.share for c in d.causes), reverse=True)
    # No recorded run keeps the nodes' records: what only they show is unknown, never guessed.
    assert {"mtu", "nic-to-gpu placement", "relaxed ordering"} <= set(names(d.unknown))


@pytest.mark.parametrize("folder", MOONCAKE_TCP)
def test_mooncake_over_tcp_names_tcp_first_citing_its_log_lines(diagnosed, folder):
    d, cited = diagnosed(folder)
    first = d.causes[0]
    assert first.name == "tcp fallback" and first.share == 1.0
    logged = [e for e in first.evidence if e.kind == "log line"]
    assert logged and cited >= len(logged)  # every line cited stands in its log at its number
    assert any("TcpTransport: listen on port" in e.text or "Found 0 HCAs" in e.text or "MC_FORCE_TCP" in e.text
               for e in logged)
    assert d.gaps and d.gaps[0].fraction > 0.8  # the line rate lies far above a TCP transfer


def test_tcp_asked_for_is_named_as_chosen_not_as_a_fault(diagnosed):
    # The mooncake_tcp backend moves the KV over TCP by design; the one-box runs set MC_FORCE_TCP (the logs say so).
    for folder, why in ((f"{AB}/mooncake_tcp", "by design"), (ONEBOX[0], "MC_FORCE_TCP was set")):
        d, _ = diagnosed(folder)
        tcp = d.causes[0]
        assert tcp.name == "tcp fallback" and not tcp.fault and why in tcp.summary
        assert any("MC_FORCE_TCP is set" in e.text for e in tcp.evidence)


def test_the_nixl_arms_are_judged_by_their_own_lines(diagnosed):
    # The A/B's NIXL arm ran UCX with UCX_TLS=tcp: its own UCX lines say TCP, and are what is cited (no Mooncake line).
    d, _ = diagnosed(f"{AB}/nixl")
    tcp = next(c for c in d.causes if c.name == "tcp fallback")
    assert "UCX_TLS=tcp,cuda_copy names no RDMA transport" in tcp.summary and not tcp.fault
    assert all("UCX" in e.text or "NIXL" in e.text for e in tcp.evidence if e.kind == "log line")
    assert not any("TcpTransport" in e.text or "MC_FORCE_TCP" in e.text for e in tcp.evidence)
    # The one-box NIXL arm's logs state no transport: it is unknown there, not named.
    d, _ = diagnosed("h200-onebox-nixl-and-mooncake-sglang-0.5.15.post1/nixl")
    assert "tcp fallback" not in names(d.causes) and "tcp fallback" in names(d.unknown)


@pytest.mark.parametrize("folder", ONEBOX)
def test_the_engine_alone_is_a_gap_and_its_own_ceiling_a_cause(diagnosed, folder):
    d, _ = diagnosed(folder)
    gaps = {g.name: g for g in d.gaps}
    assert 0 < gaps["engine alone"].fraction < 1 and gaps["engine alone"].measured < gaps["engine alone"].reference
    engine = next(c for c in d.causes if c.name == "engine's own ceiling")
    assert 0 < engine.share <= 1 and engine.evidence[0].file.startswith("engine-ceiling")
    assert (RECORDED / folder / engine.evidence[0].file).exists()


def test_the_tune_rules_its_knobs_out_and_the_load_names_its_steps(diagnosed):
    d, _ = diagnosed(TUNE)
    assert "a knob" in names(d.cleared)  # the tune found no setting better than the baseline
    d, _ = diagnosed(LOAD)
    load = next(c for c in d.causes if c.name == "load")
    # c8's transfer p50 (213 ms) against c1's (40 ms): most of the bandwidth lost to requests in flight.
    assert 0.5 < load.share < 1 and "step c8" in load.summary and "c1" in load.summary
    assert [e.file for e in load.evidence] == ["steps/c1", "steps/c2", "steps/c4", "steps/c8"]
    # A tune lying beside the load in the same folder tuned another scenario: it does not speak for the load.
    assert "a knob" in names(d.unknown)


def test_a_scenario_that_cannot_be_read_is_one_line_and_exit_2(tmp_path):
    with read_only(RECORDED / ONEBOX[0], tmp_path / "run") as copy:
        result = pdrepro("diagnose", copy, "--scenario", "no-such-scenario")
    assert result.rc == 2 and result.out == ""
    assert len(result.err.strip().splitlines()) == 1 and "no-such-scenario" in result.err


@pytest.mark.parametrize("make", ["missing", "file", "empty"])
def test_a_folder_it_cannot_read_is_one_line_and_exit_2(tmp_path, make):
    target = tmp_path / "run"
    if make == "file":
        target.write_text("not a run")
    elif make == "empty":
        target.mkdir()
    result = pdrepro("diagnose", target)
    assert result.rc == 2 and result.out == ""
    assert result.err.count("\n") == 1 and result.err.startswith("pdrepro diagnose: error: ") and str(target) in result.err
