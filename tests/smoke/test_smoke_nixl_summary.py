"""The NIXL arm in the smoke's summary, report and plots, from agent output shaped as the in-container
initiator writes it: present beside Mooncake when asked for, absent (not empty) when not."""

import copy
import json

import pytest
from test_smoke_summary import _initiator, _measure

from pdrepro.core.errors import UserError
from pdrepro.parsers.nixl_log import scan
from pdrepro.rundir.summarymodel import SmokeRow as Row
from pdrepro.rundir.summarymodel import SmokeSummary as Summary
from pdrepro.smoke.nixlpath import require_tcp
from pdrepro.smoke.plot import render_smoke_plots
from pdrepro.smoke.section import smoke_section
from pdrepro.smoke.summary import build_summary
from pdrepro.smoke.ways import MOONCAKE, NIXL, SOCKET, ways_of

# As UCX 1.23 (nixl-cu13 1.5.1) writes them at UCX_LOG_LEVEL=info in the smoke's decode container.
TCP_LANES = ("[1796170493.308134] [39ea04414c4d:1    :0]      ucp_worker.c:1997 UCX  INFO    decode inter-node "
             "cfg#1 rma_am(tcp/eth0)  amo_am(tcp/eth0)  am(tcp/eth0)  ka(tcp/eth0)")
# What UCX's default (no UCX_TLS) may pick between two processes that share a host: shared memory.
SHM_LANES = ("[1796170493.308134] [vm:11164:0]      ucp_worker.c:1997 UCX  INFO    decode intra-node cfg#1 "
             "rma_am(posix/memory)  am(posix/memory tcp/eth0)  ka(tcp/eth0)")


def _with_nixl(plan, nixl_ms, verified=True, first_ok=True):
    init = _initiator(plan, [0.4, 8.0, 60.0], [0.3, 7.5, 55.0])
    init["backends"] = ["mooncake", "nixl"]
    for row, ms in zip(init["rows"], nixl_ms):
        row["nixl"] = _measure([ms, ms * 1.1, ms * 0.9], verified)
    proof = scan("decode", TCP_LANES).to_dict()
    init["nixl_transport"] = {**proof, "lines": [TCP_LANES]}
    init["target_nixl_transport"] = proof
    init["nixl_setup"] = {"metadata_load_s": 0.02, "first_transfer_s": 7.5, "first_transfer_bytes": 134_217_728,
                          "first_transfer_verified": first_ok}
    return init


def test_nixl_rows_sit_beside_mooncakes_and_count_in_the_verification(scenario, plan):
    s = build_summary(scenario, _with_nixl(plan, [2.0, 50.0, 400.0]), {})
    top = s["rows"][-1]
    assert top["nixl_ms_median"] == pytest.approx(400.0)
    assert top["nixl_bandwidth_GB_s"] == pytest.approx(134_217_728 / 0.4 / 1e9)
    assert top["nixl_vs_socket"] == pytest.approx(55 / 400)
    assert top["nixl_verified"] is True
    # 3 sizes x 3 ways x (3 timed + 1 warm-up).
    assert s["smoke"]["transfers_checked"] == s["smoke"]["transfers_verified"] == 36
    nx = s["smoke"]["nixl"]
    assert nx["transport"] == "tcp" and nx["transports"] == {"tcp": ["eth0"]} and nx["setup"]["first_transfer_s"] == 7.5
    assert s["smoke"]["all_verified"] and s["issues"] == []
    json.dumps(s, allow_nan=False)
    text = smoke_section(s)
    assert "NIXL ms (min/med/max)" in text and "**7.50 s**" in text and "tcp/eth0" in text


def test_a_run_without_nixl_has_no_nixl_key_column_or_series(tmp_path, scenario, plan):
    s = build_summary(scenario, _initiator(plan, [0.4, 8.0, 60.0], [0.3, 7.5, 55.0]), {})
    assert not [k for r in s["rows"] for k in r if k.startswith("nixl")]
    assert "nixl" not in s["smoke"] and s["smoke"]["backends"] == ["mooncake"]
    assert "NIXL" not in smoke_section(s)
    assert ways_of(Summary.model_validate(s)) == (MOONCAKE, SOCKET)
    with_nixl = build_summary(scenario, _with_nixl(plan, [2.0, 50.0, 400.0]), {})
    assert ways_of(Summary.model_validate(with_nixl)) == (MOONCAKE, NIXL, SOCKET)
    assert len(render_smoke_plots(with_nixl, tmp_path / "plots")) == 2


def test_wrong_nixl_bytes_fail_the_run(scenario, plan):
    s = build_summary(scenario, _with_nixl(plan, [2.0, 50.0, 400.0], verified=False), {})
    assert not s["smoke"]["all_verified"]
    assert any(i["kind"] == "checksum_mismatch" and "NIXL" in i["message"] for i in s["issues"])
    assert "NO" in smoke_section(s)


def test_a_wrong_first_transfer_fails_the_run(scenario, plan):
    s = build_summary(scenario, _with_nixl(plan, [2.0, 50.0, 400.0], first_ok=False), {})
    assert not s["smoke"]["all_verified"]
    assert "WRONG BYTES" in smoke_section(s)


def test_only_tcp_lanes_pass_the_transport_check():
    require_tcp(scan("decode", TCP_LANES))
    with pytest.raises(UserError, match="posix"):
        require_tcp(scan("decode", SHM_LANES))
    with pytest.raises(UserError, match="cannot tell"):
        require_tcp(scan("decode", "UCX  INFO  Version 1.23.0"))


def test_an_arm_that_was_asked_for_but_measured_nothing_is_an_error(scenario, plan):
    init = _with_nixl(plan, [2.0, 50.0, 400.0])
    init = copy.deepcopy(init)
    init["rows"] = []
    s = build_summary(scenario, init, {})
    assert not s["smoke"]["all_verified"]
    assert s["issues"]


def test_a_nixl_stall_is_not_blamed_on_mooncakes_transport(scenario, plan):
    init = _with_nixl(plan, [2.0, 50.0, 400.0])
    init["rows"][1]["nixl"] = _measure([2.0, 2.1, 45.0])
    st = build_summary(scenario, init, {})["rows"][1]["nixl_stall"]
    assert st["stalled"] == 1 and "UCX's TCP" in st["likely_cause"] and "Mooncake" not in st["likely_cause"]


def test_the_nixl_figures_are_typed_fields_of_the_row(scenario, plan):
    """Declared in the summary model (not extras), with their units; absent from a run that did not ask."""
    declared = {name for name in Row.model_fields if name.startswith("nixl_")}
    with_nixl = Summary.model_validate(build_summary(scenario, _with_nixl(plan, [2.0, 50.0, 400.0]), {}))
    for row in with_nixl.rows:
        assert not [k for k in (row.model_extra or {}) if k.startswith("nixl")], "a NIXL figure the model lacks"
        assert row.nixl_ms_min is not None and row.nixl_ms_all and row.nixl_verified is True
    written = {k for r in build_summary(scenario, _with_nixl(plan, [2.0, 50.0, 400.0]), {})["rows"] for k in r
               if k.startswith("nixl_")}
    assert written == declared
    without = Summary.model_validate(build_summary(scenario, _initiator(plan, [0.4, 8.0, 60.0], [0.3, 7.5, 55.0]),
                                                   {}))
    assert all(getattr(row, name) is None for row in without.rows for name in declared)
    # A NIXL figure of the wrong type is refused where the summary is loaded, not deep inside the report.
    bad = build_summary(scenario, _with_nixl(plan, [2.0, 50.0, 400.0]), {})
    bad["rows"][0]["nixl_ms_min"] = "fast"
    with pytest.raises(ValueError, match="nixl_ms_min"):
        Summary.model_validate(bad)
