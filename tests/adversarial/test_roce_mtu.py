"""Hostile inputs to the RoCE MTU's three uses: the payload ceiling (it must rise with the MTU and stay below
the line rate), the kernel's netdev-to-RoCE MTU derivation, a node's sysfs as the sweep records it (any text
in an MTU file, any netdev name in a GID's attributes) and the recorded NIC facts the report reads (any
value a record may claim): a figure, an honest "not recorded", or one line naming the key, never a traceback
and never a ceiling drawn from an MTU no port can have."""

from __future__ import annotations

import json

import pytest
from depth import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from runbuilder import build_run, sweep_provenance
from sysfs_builder import h20_node

from pdrepro.analysis.summarize import compute_summary
from pdrepro.core.errors import UserError
from pdrepro.core.roce import IB_MTUS, KERNEL_ROCE_RESERVE, payload_ceiling_GB_s, roce_mtu
from pdrepro.host import sysfs
from pdrepro.report.markdown import render_report
from pdrepro.scenario.model import load_scenario

SCENARIO = load_scenario("h20-qwen3-235b-1p1d")
rates = st.floats(min_value=1e-3, max_value=1e4, allow_nan=False, allow_infinity=False)
mtus = st.integers(min_value=1, max_value=1 << 20)


@given(rate=rates, a=mtus, b=mtus)
def test_the_ceiling_rises_with_the_mtu_and_stays_below_the_line_rate(rate, a, b):
    assume(a < b)
    low, high = payload_ceiling_GB_s(rate, a), payload_ceiling_GB_s(rate, b)
    assert 0 < low < high < rate


@given(rate=rates, mtu=st.sampled_from(IB_MTUS), k=st.integers(min_value=1, max_value=64))
def test_the_ceiling_scales_with_the_ports(rate, mtu, k):
    assert payload_ceiling_GB_s(k * rate, mtu) == pytest.approx(k * payload_ceiling_GB_s(rate, mtu))


@given(a=st.integers(min_value=-(1 << 31), max_value=1 << 31), b=st.integers(min_value=-(1 << 31), max_value=1 << 31))
def test_the_roce_mtu_is_an_ib_mtu_that_fits_and_rises_with_the_netdev(a, b):
    assume(a <= b)
    ra, rb = roce_mtu(a), roce_mtu(b)
    assert ra in (0, *IB_MTUS) and ra <= rb
    assert ra == 0 or ra + KERNEL_ROCE_RESERVE <= a


@settings(max_examples=examples(15))
@given(text=st.text(max_size=40) | st.integers().map(str), ndev=st.sampled_from(
    ["ens10np0", "../net/ens10np0", "..", ".", "ens10np0/../ens10np0"]))
def test_any_sysfs_mtu_file_is_recorded_as_an_ib_mtu_or_unknown(tmp_path_factory, text, ndev):
    root = tmp_path_factory.mktemp("sys")
    h20_node(root, nics=1)
    port = root / "class" / "infiniband" / "mlx5_0" / "ports" / "1"
    for name in (port / "gid_attrs" / "ndevs").iterdir():
        name.write_text(ndev + "\n")
    (root / "class" / "net" / "ens10np0" / "mtu").write_text(text)
    rec = sysfs.nic_inventory(root / "class" / "infiniband")["mlx5_0"]["ports"]["1"]
    assert rec["roce_mtu"] in (None, *IB_MTUS)
    assert rec["netdev_mtu"] is None or isinstance(rec["netdev_mtu"], int)
    if ndev != "ens10np0":
        assert rec["netdev_mtu"] is None  # a name that is not one path component reads nothing


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return build_run(tmp_path_factory.mktemp("run") / "r", SCENARIO, provenance=sweep_provenance(SCENARIO))


claims = st.none() | st.booleans() | st.integers(min_value=-(1 << 40), max_value=1 << 40) | st.text(max_size=8) \
    | st.sampled_from(IB_MTUS) | st.floats(allow_nan=True) | st.lists(st.integers(), max_size=2)


@settings(max_examples=examples(20))
@given(roce=claims, netdev=claims, state=claims, layer=st.sampled_from(["Ethernet", "InfiniBand", None, 7]))
def test_any_recorded_port_gives_a_figure_a_not_recorded_or_one_line(run, roce, netdev, state, layer):
    prov = sweep_provenance(SCENARIO)
    prov["host"]["nics"] = {"mlx5_0": {"ports": {"1": {"rate": "400 Gb/sec (4X NDR)", "state": state,
                                                      "link_layer": layer, "netdev_mtu": netdev, "roce_mtu": roce}}}}
    run.provenance_file.write_text(json.dumps(prov))
    try:
        report = render_report(compute_summary(run, SCENARIO))
    except UserError as err:
        assert "\n" not in str(err) and str(err)
        return
    line = [x for x in report.splitlines() if x.startswith("- Against the fabric:")]
    assert len(line) == 1
    if "payload ceiling at" in line[0]:
        assert roce in IB_MTUS and not isinstance(roce, bool) and f"RoCE MTU {roce}" in line[0]
