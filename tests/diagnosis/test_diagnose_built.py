"""`pdrepro diagnose` on fixture runs built for one cause each (diagnosisbuild): the cause planted is ranked
first with its evidence, and the same run without it never names it."""

from __future__ import annotations

import fakebin
import pytest
from diagnosisbuild import RELAXED_OFF, base_run, copy_of, engine_alone, node_records, overlapping, slow_queue, split, startup
from diagnosisrun import cited_lines_exist, diagnose_json, names

from pdrepro.core.roce import payload_ceiling_GB_s


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return base_run(tmp_path_factory.mktemp("base") / "run")


@pytest.fixture
def run(base, tmp_path):
    return copy_of(base, tmp_path / "run")


def test_a_70_10_10_10_split_ranks_rail_skew_first_with_each_rails_share(run):
    split(run, (0.7, 0.1, 0.1, 0.1))
    d = diagnose_json(run.root)
    first = d.causes[0]
    assert first.name == "rail skew" and first.fault
    shares = sorted(e.text.split(": ")[1].split("%")[0] for e in first.evidence)
    assert shares == ["10.0", "10.0", "10.0", "70.0"]
    assert all(e.kind == "counter" and (run.root / e.file).is_file() for e in first.evidence)
    # The busiest rail at 70% of four: an even split would be 1 / (4 x 0.7) faster; the skew costs 64% of it.
    line = next(g for g in d.gaps if g.name == "line rate")
    assert first.share == pytest.approx(min(1.0, (1 - 1 / 2.8) / line.fraction), rel=1e-3)


def test_an_even_split_never_names_rail_skew(run):
    split(run, (0.25, 0.25, 0.25, 0.25))
    d = diagnose_json(run.root)
    assert "rail skew" in names(d.cleared) and "rail skew" not in names(d.causes)


def test_a_1500_byte_mtu_in_the_nodes_records_is_named_with_its_ports(run, tmp_path):
    node_records(run, tmp_path, prefill={"mtu": 1500}, decode={"mtu": 1500})
    d = diagnose_json(run.root)
    first = d.causes[0]
    assert first.name == "mtu" and first.fault and "RoCE MTU 1024" in first.summary
    assert len(first.evidence) == 8 and all(e.kind == "sysfs" and e.file.startswith("nodes/") for e in first.evidence)
    assert all("netdev MTU 1500 -> RoCE MTU 1024" in e.text for e in first.evidence)
    # The payload ceiling at the active MTU is a gap of its own, held against the scenario's line rate.
    payload = next(g for g in d.gaps if g.name == "payload ceiling")
    assert payload.reference == pytest.approx(payload_ceiling_GB_s(200.0, 1024))


def test_two_ends_at_different_mtus_are_named_and_full_mtus_are_not(run, tmp_path):
    node_records(run, tmp_path, prefill={"mtu": 9000}, decode={"mtu": 1500})
    d = diagnose_json(run.root)
    mtu = next(c for c in d.causes if c.name == "mtu")
    assert "the two ends disagree" in mtu.summary and "decode 1024" in mtu.summary and "prefill 4096" in mtu.summary
    (run.root / "nodes" / "decode.json").unlink()
    node_records(run, tmp_path / "again", decode={"mtu": 9000})
    d = diagnose_json(run.root)
    assert "mtu" in names(d.cleared) and "mtu" not in names(d.causes)


def test_an_engine_that_found_no_hca_is_a_tcp_fallback_first(run):
    startup(run, "tcp")
    d = diagnose_json(run.root)
    first = d.causes[0]
    assert first.name == "tcp fallback" and first.fault and first.share == 1.0
    assert cited_lines_exist(run.root, d) >= 2
    assert any("Found 0 HCAs" in e.text for e in first.evidence)


def test_an_engine_on_rdma_never_names_tcp(run):
    startup(run, "rdma")
    d = diagnose_json(run.root)
    assert "tcp fallback" in names(d.cleared) and "tcp fallback" not in names(d.causes)
    assert "gid type and index" in names(d.cleared)  # every GID picked has its network device


def test_no_suitable_gid_is_named_with_its_line(run):
    startup(run, "no-gid")
    d = diagnose_json(run.root)
    assert d.causes[0].name == "gid type and index" and d.causes[0].fault
    assert any("No suitable GID found on mlx5_0/1" in e.text and e.line for e in d.causes[0].evidence)
    assert cited_lines_exist(run.root, d) >= 2


def test_relaxed_ordering_off_on_rdma_is_named_first_with_its_line(run):
    startup(run, "rdma", [RELAXED_OFF])
    d = diagnose_json(run.root)
    first = d.causes[0]
    assert first.name == "relaxed ordering" and first.fault and first.share > 0.5
    assert [e.text.endswith(RELAXED_OFF) for e in first.evidence] == [True, True]
    assert cited_lines_exist(run.root, d) == 2


def test_a_gpu_without_a_nic_on_its_numa_node_is_named(run, tmp_path, monkeypatch):
    fakebin.nvidia_smi(fakebin.first_on_path(tmp_path / "bin", monkeypatch))
    node_records(run, tmp_path, prefill={"nics": 2})
    d = diagnose_json(run.root)
    placement = next(c for c in d.causes if c.name == "nic-to-gpu placement")
    assert placement.fault and d.causes.index(placement) == 0
    assert "SYS" in placement.evidence[0].text and placement.evidence[0].file == "nodes/prefill.json"


def test_a_healthy_node_record_rules_its_causes_out(run, tmp_path, monkeypatch):
    fakebin.nvidia_smi(fakebin.first_on_path(tmp_path / "bin", monkeypatch))
    node_records(run, tmp_path, prefill={}, decode={})
    d = diagnose_json(run.root)
    assert {"mtu", "gid type and index", "nic-to-gpu placement", "relaxed ordering"} <= set(names(d.cleared))
    relaxed = next(c for c in d.cleared if c.name == "relaxed ordering")
    assert "PCIe path allows it, MC_IB_PCI_RELAXED_ORDERING=1" in relaxed.why


def test_a_nic_whose_pcie_path_forbids_relaxed_ordering_is_named_first_with_its_function(run, tmp_path):
    startup(run, "rdma")  # on RDMA into GPU memory relaxed ordering off costs most of the figure
    node_records(run, tmp_path, prefill={"relaxed": False}, decode={})
    d = diagnose_json(run.root)
    first = d.causes[0]
    assert first.name == "relaxed ordering" and first.fault and first.share > 0.5
    assert {e.file for e in first.evidence} == {"nodes/prefill.json"} and len(first.evidence) == 4
    assert all("its PCIe path forbids it at 0000:" in e.text for e in first.evidence)


def test_the_engine_knob_unset_leaves_relaxed_ordering_off_on_an_allowing_path(run, tmp_path):
    startup(run, "rdma")
    node_records(run, tmp_path, knob=None, prefill={}, decode={})
    d = diagnose_json(run.root)
    first = d.causes[0]
    assert first.name == "relaxed ordering" and first.fault
    assert sorted(e.file for e in first.evidence) == ["nodes/decode.json", "nodes/prefill.json"]
    assert all("unset, which the pinned Mooncake reads as 0" in e.text for e in first.evidence)


def test_a_path_not_readable_leaves_relaxed_ordering_unknown_unless_the_knob_is_off(run, tmp_path):
    node_records(run, tmp_path, prefill={"relaxed": None}, decode={"relaxed": None})
    d = diagnose_json(run.root)
    assert "relaxed ordering" in names(d.unknown) and "relaxed ordering" not in names(d.causes)
    # The engine's knob unset is off whatever the path allows: a fact of the record, named without the path.
    node_records(run, tmp_path / "unset", knob=None, prefill={"relaxed": None})
    relaxed = next(c for c in diagnose_json(run.root).causes if c.name == "relaxed ordering")
    assert [e.file for e in relaxed.evidence] == ["nodes/prefill.json"] and "every NIC" in relaxed.evidence[0].text


@pytest.mark.parametrize("bad", ["not json", "[]", '{"format": "pdrepro-node-record/1"}',
                                 '{"format": "pdrepro-node-record/9", "nics": []}'])
def test_a_record_that_is_not_the_model_is_unknown_with_its_reason(run, tmp_path, bad):
    node_records(run, tmp_path, prefill={"mtu": 1500})
    (run.root / "nodes" / "prefill.json").write_text(bad)
    d = diagnose_json(run.root)
    assert not {"mtu", "gid type and index", "relaxed ordering", "nic-to-gpu placement"} & set(names(d.causes))
    mtu = next(u for u in d.unknown if u.name == "mtu")
    assert "nodes/prefill.json" in mtu.missing and str(run.root) not in mtu.missing


def test_the_engine_alone_far_below_the_line_rate_is_its_own_ceiling_first(run):
    split(run, (0.25, 0.25, 0.25, 0.25))
    engine_alone(run, 170.0)  # of the 200 GB/s of four 400G NICs; above the best per request (164 GB/s)
    d = diagnose_json(run.root)
    first = d.causes[0]
    assert first.name == "engine's own ceiling" and not first.fault and "170.00 GB/s" in first.summary
    assert first.evidence[0].file == "engine-ceiling.json"
    line = next(g for g in d.gaps if g.name == "line rate")
    assert first.share == pytest.approx(min(1.0, (1 - 170.0 / 200.0) / line.fraction), rel=1e-3)
    assert any(g.name == "engine alone" for g in d.gaps)


def test_an_engine_alone_below_the_requests_is_named_as_no_ceiling_of_this_box(run):
    engine_alone(run, 40.0)  # the requests reach 66 GB/s at 512 tokens: no ceiling of this box
    engine = next(c for c in diagnose_json(run.root).causes if c.name == "engine's own ceiling")
    assert engine.fault and "not of this box" in engine.summary and engine.share == 0.0


def test_no_engine_alone_leaves_its_ceiling_unknown_and_plain_phases_are_ruled_out(run):
    d = diagnose_json(run.root)
    assert "engine's own ceiling" in names(d.unknown) and not any(g.name == "engine alone" for g in d.gaps)
    assert "servers' phases" in names(d.cleared)  # the builder's queue is under a millisecond


def test_requests_waiting_in_the_prefill_queue_are_named_first(run):
    split(run, (0.25, 0.25, 0.25, 0.25))
    slow_queue(run, 3.0)
    d = diagnose_json(run.root)
    first = d.causes[0]
    assert first.name == "servers' phases" and first.fault and first.summary.startswith("prefill.queue takes")
    assert first.evidence[0].file == "logs/prefill.log"


def test_a_smoke_run_is_diagnosed_as_a_smoke(tmp_path):
    from runkinds import build_smoke_run

    smoke = build_smoke_run(tmp_path / "smoke")
    d = diagnose_json(smoke.root)
    assert d.kind == "smoke" and d.members == ["."]
    tcp = next(c for c in d.causes if c.name == "tcp fallback")
    assert any("Found 0 HCAs" in e.text for e in tcp.evidence) and cited_lines_exist(smoke.root, d) >= 2


def test_a_node_with_only_roce_v1_gids_names_the_gid_from_its_record(run, tmp_path):
    node_records(run, tmp_path, prefill={"gid_mode": "v1-only"}, decode={})
    d = diagnose_json(run.root)
    gid = next(c for c in d.causes if c.name == "gid type and index")
    assert gid.fault and {e.file for e in gid.evidence} == {"nodes/prefill.json"} and len(gid.evidence) == 4
    assert all(e.kind == "sysfs" and "gid_reachable False" in e.text for e in gid.evidence)
    assert d.causes.index(gid) == 0  # no other cause has evidence here with a larger share


def test_transfers_sharing_the_path_rank_load_first_with_the_prefill_logs_figures(run):
    # Four requests enter the prefill at once, each transfer four times slower than alone; the engine alone moves
    # 170 GB/s. No load sweep ran: the evidence is the run's own prefill lines.
    engine_alone(run, 170.0)
    overlapping(run, together=4, slower=4.0)
    d = diagnose_json(run.root)
    first = d.causes[0]
    assert first.name == "load" and not first.fault and first.share > 0.9
    assert "4 KV transfers in flight" in first.summary and "engine alone" in first.summary
    assert first.evidence and all(e.file == "logs/prefill.log" and "transfers in flight" in e.text
                                  for e in first.evidence)
    assert (run.root / first.evidence[0].file).is_file()


@pytest.mark.parametrize("slower", [1.0, 4.0])
def test_serial_transfers_never_name_load_however_slow(run, slower):
    # One at a time (the fixture's clock runs each request after the last): a slow transfer that moved alone is no
    # load, whatever the engine alone does.
    engine_alone(run, 170.0)
    overlapping(run, together=1, slower=slower)
    d = diagnose_json(run.root)
    assert "load" not in names(d.causes)
    assert "moved alone" in next(c.why for c in d.cleared if c.name == "load")
