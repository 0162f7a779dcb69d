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
# Servers capped at one running request with eight in flight, and the same box without the cap (its README).
PLANTED = "h200-diagnose-planted-queue-sglang-0.5.15.post1"
ONEBOX = ("h200-onebox-sglang-0.5.15.post1", "h200-onebox-host-sglang-0.5.15.post1",
          "h200-onebox-host-sglang-0.5.15.post1-rerun", "h200-onebox-host-nodes-sglang-0.5.15.post1/run")
EVERY = [AB, f"{AB}/mooncake_tcp", f"{AB}/nixl", "h200-ab-mooncake-tcp-vs-nixl-sglang-0.5.15.post1/first-session",
         "h200-compare-7b-sglang-0.5.15.post1/cmp", "h200-compare-stacks-7b-sglang-0.5.15.post1", LOAD, TUNE,
         f"{TUNE}/s3", *ONEBOX, "h200-onebox-nixl-and-mooncake-sglang-0.5.15.post1",
         "h200-onebox-nixl-and-mooncake-sglang-0.5.15.post1/nixl", *(f"{PLANTED}/{r}" for r in ("planted", "control"))]
# The run whose Mooncake engine logged TCP where nothing it holds says the box had no RDMA device (the first
# one-box run predates the sweep's device record): TCP is the first cause, with the share of the whole gap.
MOONCAKE_TCP = [ONEBOX[0]]
# The runs whose own files show the KV never met a fabric (TCP allowed by the scenario, no RDMA device found; a
# load, which keeps no summary of its own, read from its logs and its sweep's host record): TCP is their path,
# ruled out as a cause, and no line rate is a gap.
NO_FABRIC = [AB, f"{AB}/mooncake_tcp", f"{AB}/nixl", LOAD, TUNE, f"{TUNE}/s3", *ONEBOX[1:], f"{PLANTED}/planted",
             f"{PLANTED}/control"]


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
    # What only the nodes' records or an RDMA port could show: ruled out where the run shows its KV never met a
    # fabric, else unknown (no recorded run of a fabric keeps the records), never guessed.
    fabric = {"mtu", "nic-to-gpu placement", "relaxed ordering", "gid type and index", "rail skew"}
    assert fabric <= set(names(d.cleared) if folder in NO_FABRIC else names(d.unknown))


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


@pytest.mark.parametrize("folder", NO_FABRIC)
def test_a_run_that_never_met_a_fabric_rules_tcp_out_and_has_no_line_rate_gap(diagnosed, folder):
    d, _ = diagnosed(folder)
    assert "tcp fallback" not in names(d.causes) and "engine's own ceiling" not in names(d.causes)
    why = next(c.why for c in d.cleared if c.name == "tcp fallback")
    assert "without an RDMA device" in why and "logs/" in why  # the logs that say TCP, named
    assert not {"line rate", "payload ceiling"} & {g.name for g in d.gaps}
    # No RDMA port carried the KV: its MTU, GID, relaxed ordering, placement and rails are ruled out with that why.
    for name in ("mtu", "gid type and index", "relaxed ordering", "nic-to-gpu placement", "rail skew"):
        assert "no RDMA port carried it" in next(c.why for c in d.cleared if c.name == name)


def test_tcp_asked_for_is_named_as_chosen_not_as_a_fault(diagnosed):
    # The one-box runs set MC_FORCE_TCP (the logs say so): where the run cannot show it had no fabric, TCP is named
    # first, as chosen, not as a fault.
    for folder in MOONCAKE_TCP:
        d, _ = diagnosed(folder)
        tcp = d.causes[0]
        assert tcp.name == "tcp fallback" and not tcp.fault and "MC_FORCE_TCP was set" in tcp.summary
        assert any("MC_FORCE_TCP is set" in e.text for e in tcp.evidence)


def test_the_nixl_arms_are_judged_by_their_own_lines(diagnosed):
    # The A/B's NIXL arm ran UCX with UCX_TLS=tcp on a box without RDMA: its own logs are the ones ruled out.
    d, _ = diagnosed(f"{AB}/nixl")
    why = next(c.why for c in d.cleared if c.name == "tcp fallback")
    assert "logs/prefill.log" in why and "logs/decode.log" in why
    # The one-box pair: its Mooncake arm is ruled out by its own logs; its NIXL arm, whose logs state no transport
    # and whose summary no device search, keeps its line rate as a gap.
    d, _ = diagnosed("h200-onebox-nixl-and-mooncake-sglang-0.5.15.post1")
    why = next(c.why for c in d.cleared if c.name == "tcp fallback")
    assert "mooncake-tcp/logs/prefill.log" in why and [g.name for g in d.gaps] == ["line rate"]
    assert d.gaps[0].where.startswith("nixl ")
    d, _ = diagnosed("h200-onebox-nixl-and-mooncake-sglang-0.5.15.post1/nixl")
    assert "tcp fallback" not in names(d.causes) and "tcp fallback" in names(d.unknown)


@pytest.mark.parametrize("folder", ONEBOX[1:])
def test_the_engine_alone_is_the_gap_of_a_box_without_fabric_not_a_cause(diagnosed, folder):
    d, _ = diagnosed(folder)
    gaps = {g.name: g for g in d.gaps}
    assert list(gaps) == ["engine alone"]
    assert 0 < gaps["engine alone"].fraction < 1 and gaps["engine alone"].measured < gaps["engine alone"].reference
    why = next(c.why for c in d.cleared if c.name == "engine's own ceiling")
    assert "never met a fabric" in why


def test_the_engine_alone_below_the_line_rate_is_a_cause_where_the_fabric_is_unknown(diagnosed):
    # The first one-box run records no device search: its line rate stands, and the engine's shortfall to it is a cause.
    d, _ = diagnosed(ONEBOX[0])
    engine = next(c for c in d.causes if c.name == "engine's own ceiling")
    assert 0 < engine.share <= 1 and engine.evidence[0].file.startswith("engine-ceiling")
    assert (RECORDED / ONEBOX[0] / engine.evidence[0].file).exists()


def test_the_tune_rules_its_knobs_out_and_the_load_names_its_steps(diagnosed):
    d, _ = diagnosed(TUNE)
    assert "a knob" in names(d.cleared)  # the tune found no setting better than the baseline
    d, _ = diagnosed(LOAD)
    load = next(c for c in d.causes if c.name == "load")
    # c8's transfer p50 (213 ms) against c1's (40 ms): most of the bandwidth lost to requests in flight. The load's
    # KV never met a fabric, so no line rate is a gap, and the finding holds no share of one: it is named, first.
    assert d.causes[0] is load and load.share == 0 and not d.gaps
    assert "step c8" in load.summary and "c1" in load.summary and "cost 81% of the bandwidth" in load.summary
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


def test_the_planted_cap_is_ranked_first_with_the_servers_own_setting_and_the_control_never_names_it(diagnosed):
    d, cited = diagnosed(f"{PLANTED}/planted")
    first = d.causes[0]
    assert first.name == "servers' phases" and first.fault and first.share == 1.0
    assert "decode.alloc_wait" in first.summary and "70% of it waiting" in first.summary
    cap = [e for e in first.evidence if e.file == "provenance.json"]
    assert cap and "max_running_requests: decode 1, prefill 1" in cap[0].text and "8 requests in flight" in cap[0].text
    assert "--max-running-requests to 8" in first.fix
    # Serialised by the cap, each transfer moved alone: load is ruled out, never named.
    assert "load" in names(d.cleared) and "load" not in names(d.causes)
    # The control: same scenario, box and day, the servers' own cap: no waiting phase; its cause is load (below).
    d, _ = diagnosed(f"{PLANTED}/control")
    assert "servers' phases" in names(d.cleared) and "servers' phases" not in names(d.causes)
    assert [g.name for g in d.gaps] == ["engine alone"]


def test_the_control_names_load_first_from_its_own_overlapping_transfers(diagnosed):
    # Eight requests in flight over TCP on one box: each transfer shared the path with seven to eleven others and
    # took 180.6 ms at 4096 tokens, where the engine alone moves the same 50.3 MB in 24.1 ms (2.088 GB/s).
    d, _ = diagnosed(f"{PLANTED}/control")
    first = d.causes[0]
    assert first.name == "load" and not first.fault and first.share == 1.0
    assert "9 KV transfers in flight at 4096 tokens" in first.summary and "87% of the bandwidth" in first.summary
    assert "180.56 ms against 24.10 ms" in first.summary and "engine alone" in first.summary
    texts = [e.text for e in first.evidence]
    assert [e.file for e in first.evidence] == ["logs/prefill.log", "logs/prefill.log"]
    assert texts[0].startswith("1024 tokens: 7.5 transfers in flight") and "at most 8" in texts[0]
    assert texts[1].startswith("4096 tokens: 9 transfers in flight") and "24.10 ms" in texts[1]
    assert "pdrepro load" in first.fix
    # Its loss is the gap itself: 1 - 24.10 / 180.56 against the engine alone's 86.6% at 4096 tokens.
    assert d.gaps[0].fraction == pytest.approx(1 - 24.10 / 180.56, abs=0.002)


@pytest.mark.parametrize("folder", [*ONEBOX, f"{PLANTED}/planted"])
def test_a_run_whose_transfers_moved_alone_never_names_load(diagnosed, folder):
    # The one-box proofs keep one request in flight; the planted cap serialised eight: no transfer shared the path.
    d, _ = diagnosed(folder)
    assert "load" not in names(d.causes)
    why = next(c.why for c in d.cleared if c.name == "load")
    assert "moved alone" in why


@pytest.mark.parametrize("folder", [f for f in EVERY if PLANTED not in f])
def test_no_other_recorded_run_is_told_its_cap_is_below_its_concurrency(diagnosed, folder):
    d, _ = diagnosed(folder)
    assert not any("max_running_requests" in e.text for c in d.causes for e in c.evidence)


@pytest.mark.parametrize("host", ["rdma device", "no device search", "malformed"])
def test_a_load_whose_host_record_does_not_show_a_box_without_rdma_keeps_tcp_and_the_line_rate(tmp_path, host):
    # Fixtures made from the recorded load by editing one file: its sweep's host record lists an RDMA device (TCP
    # was then asked for, not the only path), or records no device search at all (nothing says there was no
    # fabric), or holds a device list of the wrong type (unreadable: no evidence). Each way TCP stays a cause, the
    # line rate stays a gap, the fabric's causes are not ruled out, and the load is still read from its steps.
    import json
    import shutil

    copy = tmp_path / "load"
    shutil.copytree(RECORDED / LOAD, copy)
    provenance = json.loads((copy / "provenance.json").read_text())
    if host == "rdma device":
        provenance["host"]["nics"] = {"mlx5_0": {"ports": {"1": {"state": "ACTIVE"}}}}
    elif host == "malformed":
        provenance["host"]["nics"] = "mlx5_0"
    else:
        del provenance["host"]["nics"]
    (copy / "provenance.json").write_text(json.dumps(provenance))
    d = diagnose_json(copy)
    assert "tcp fallback" in names(d.causes) and [g.name for g in d.gaps] == ["line rate"]
    assert not {"mtu", "relaxed ordering", "nic-to-gpu placement"} & set(names(d.cleared))
    assert "load" in names(d.causes)
