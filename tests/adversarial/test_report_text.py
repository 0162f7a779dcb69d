"""The report says only what the run's records hold, on hostile summaries (issue 23, item 4).

The real one-box TCP run's summary (tests/recorded/h200-onebox-host-sglang-0.5.15.post1), its records made
hostile: the transport and the RDMA devices changed or contradicted, the endpoints malformed or remote,
the servers' /server_info of odd types (a TP size of True, -1 or "8"), the host's GPU list any length,
figures removed from rows, the engine ceiling missing at a length. For each, the report renders without
a traceback, holds a no-fabric run to no line rate and no utilisation column, keeps the line rate
otherwise, names a GPU count in its title only where the records show it, leaves no column no row fills,
and stays one line per title. These are the faults the strategy was written to find: a TCP one-box run
measured against a nominal line rate, a title repeating the scenario's plan ("two GPUs") over the one
GPU that ran, columns of dashes, a malformed endpoint ending in ValueError.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from reporttext import tables

from pdrepro.report.markdown import render_report
from pdrepro.report.placement import no_fabric
from pdrepro.rundir.summarymodel import Summary

RECORDED = Path(__file__).resolve().parents[1] / "recorded" / "h200-onebox-host-sglang-0.5.15.post1"
BASE = json.loads((RECORDED / "summary.json").read_text())
DASH = "—"

# Mostly the loopback, where the title speaks of GPUs; the rest remote, malformed or empty.
ENDPOINT = st.one_of(st.just("http://127.0.0.1:30000"),
                     st.sampled_from(["http://localhost:1", "http://[::1]:2", "http://[::1", "http://node-a:30000",
                                      "http://node-b:30001", "not a url", ""]))
ODD = st.sampled_from([True, -1, 0, "8", None, 1, 2, 8, 1.5])


@st.composite
def hostile(draw) -> dict[str, Any]:
    s = json.loads(json.dumps(BASE))
    # Half the runs are the recorded case (TCP, no device, policy any, no conflict): no fabric.
    s["transport"] = draw(st.one_of(st.just("tcp"), st.sampled_from(["rdma", "mixed", "unknown", None])))
    evidence = s["transport_evidence"]
    evidence["rdma_devices"]["found"] = draw(st.one_of(st.just(False), st.sampled_from([True, None])))
    evidence["conflicts"] = draw(st.sampled_from([[], ["the logs say tcp, the proof says rdma"]]))
    s["scenario"]["transport"] = draw(st.one_of(st.just("any"), st.just("rdma")))
    prov = s["provenance"]
    prov["endpoints"] = {"prefill": draw(ENDPOINT), "decode": draw(ENDPOINT), "router": draw(ENDPOINT)}
    for role in ("prefill", "decode"):
        prov["server_info"][role]["tp_size"] = draw(ODD)
        if draw(st.integers(0, 3)) == 0:
            prov["server_info"][role] = draw(st.sampled_from([None, "unreadable", {"error": "timed out"}]))
    prov["host"]["gpu"]["gpus"] = ["NVIDIA H200"] * draw(st.integers(0, 3))
    s["scenario"]["model"] = draw(st.sampled_from([{"name": "Model\nwith a break"}, None, {}, {"name": "M"}]))
    for row in s["rows"]:
        for key in draw(st.lists(st.sampled_from(["ttft_ms_mean", "utilization_pct", "transfer_share_of_ttft_pct",
                                                  "bandwidth_GB_s", "requests"]), max_size=3)):
            row[key] = None
    if draw(st.booleans()):
        s["engine_ceiling"] = {L: c for L, c in s["engine_ceiling"].items() if draw(st.booleans())}
    return s


@settings(max_examples=examples(150))
@given(hostile())
def test_the_report_claims_only_what_the_records_hold(data):
    summary = Summary.model_validate(data)
    report = render_report(summary)
    lines = report.splitlines()
    assert lines[0].startswith("# KV transfer report: ") and lines[1] == ""
    meta = lines[2]
    measured = next(h for h, _ in tables(report) if "Transfer Time (ms)" in h)
    if no_fabric(summary):
        assert "line rate:" not in meta and "Utilization (%)" not in measured
        assert "% of the" not in report.split("## Headline", 1)[1].split("##", 1)[0]
    else:
        assert "line rate: 12.5 GB/s" in meta
    # A GPU count in the title only where the host's record holds exactly that many and every server was local.
    gpus = len(data["provenance"]["host"]["gpu"]["gpus"])
    if "one GPU" in lines[0]:
        assert gpus == 1 and "two GPUs" not in lines[0]
    if "with two GPUs" in lines[0]:
        assert gpus == 2
    for headers, rows in tables(report):
        if rows:
            for i, h in enumerate(headers):
                assert not all(r[i] in ("", DASH) for r in rows), f"empty column {h}"
