"""`pdrepro diagnose` on fixture runs built for one cause each (diagnosisbuild): the cause planted is ranked
first with its evidence, and the same run without it never names it."""

from __future__ import annotations

import fakebin
import pytest
from diagnosisbuild import RELAXED_OFF, base_run, copy_of, node_records, split, startup
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
    assert {"mtu", "gid type and index", "nic-to-gpu placement"} <= set(names(d.cleared))
    # Today's doctor records no relaxed ordering: it stays unknown, not guessed from the rest.
    assert "relaxed ordering" in names(d.unknown)
