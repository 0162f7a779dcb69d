"""Reports say what ran: a one-box TCP run has no line rate and is held against the engine alone on the
same box; a one-box run over RDMA keeps its NIC's line rate; the title follows the placement the run
recorded; no table has a column no row fills; a plot never writes through a link planted at its path.

The one-box run is the real recorded one (tests/recorded/h200-onebox-host-sglang-0.5.15.post1, see its
SOURCE), analysed by the CLI on a copy, as a user would."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from reporttext import tables

from pdrepro.report.markdown import render_report
from pdrepro.report.plots import render_plots
from pdrepro.rundir.summarymodel import RdmaDevices, Summary, TransportEvidence

RECORDED = Path(__file__).resolve().parents[1] / "recorded" / "h200-onebox-host-sglang-0.5.15.post1"
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "report-h20-published.md"
DASH = "—"


def empty_columns(report: str) -> list[str]:
    return [f"{headers[0]} .. {h}" for headers, rows in tables(report) if rows
            for i, h in enumerate(headers) if all(r[i] in ("", DASH, "-") for r in rows)]


def measured(report: str) -> tuple[list[str], list[list[str]]]:
    return next(t for t in tables(report) if "Transfer Time (ms)" in t[0])


@pytest.fixture(scope="module")
def onebox(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("onebox") / RECORDED.name
    shutil.copytree(RECORDED, run)
    done = subprocess.run([sys.executable, "-m", "pdrepro", "analyze", str(run)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return run


def test_the_one_box_tcp_report_has_no_line_rate_and_holds_the_peak_against_the_engine_alone(onebox):
    report = (onebox / "report.md").read_text()
    summary = Summary.model_validate(json.loads((onebox / "summary.json").read_text()))
    # The run's own evidence: TCP, and the sweep found no RDMA device.
    assert summary.transport == "tcp" and summary.transport_evidence is not None
    assert summary.transport_evidence.rdma_devices.found is False
    assert "line rate" not in report.split("## Against the engine alone")[0].replace("no line rate", "")
    assert "12.5 GB/s" not in report
    headers, rows = measured(report)
    assert "Utilization (%)" not in headers and len(rows) == 4
    # The headline's denominator is the engine alone at the peak's length, as the run measured it.
    peak = summary.headline.peak_bandwidth_prompt_len
    ceiling = (summary.engine_ceiling or {})[str(peak)]
    assert ceiling.ratio is not None and ceiling.engine_GB_s is not None
    assert (f"= {ceiling.ratio:.2f} of the Mooncake engine alone on the same box ({ceiling.engine_GB_s:.2f} GB/s"
            in report)
    assert "utilization = bandwidth / line rate" not in report


def test_the_title_says_the_one_gpu_the_run_recorded(onebox):
    title = (onebox / "report.md").read_text().splitlines()[0]
    prov = json.loads((onebox / "provenance.json").read_text())
    # What the records say: one GPU on the sweep's host, both servers reached on the loopback.
    assert prov["host"]["gpu"]["gpus"] == ["NVIDIA H200"]
    assert all("127.0.0.1" in url for url in prov["endpoints"].values())
    assert title == ("# KV transfer report: 1P1D Qwen2.5-0.5B-Instruct at TP 1, prefill and decode sharing the "
                     "one GPU of one node")
    # The scenario the run recorded planned two GPUs; the title no longer repeats it.
    assert "two GPUs" in (onebox / "scenario.yaml").read_text() and "two GPUs" not in title


def _over_rdma(summary: Summary) -> Summary:
    """The same one-box run as if it had moved its KV over RDMA through a NIC of the box (a fixture)."""
    evidence = summary.transport_evidence or TransportEvidence()
    devices = RdmaDevices(found=True, devices={"prefill": ["mlx5_0"], "decode": ["mlx5_0"]})
    return summary.model_copy(update={"transport": "rdma",
                                      "transport_evidence": evidence.model_copy(update={"rdma_devices": devices})})


def test_a_one_box_run_over_rdma_keeps_its_nics_line_rate(onebox):
    summary = _over_rdma(Summary.model_validate(json.loads((onebox / "summary.json").read_text())))
    report = render_report(summary)
    assert f"line rate: {summary.line_rate_GB_s:g} GB/s" in report
    headers, rows = measured(report)
    util = headers.index("Utilization (%)")
    assert [r[util] for r in rows] == [f"{r.utilization_pct:.1f}" for r in summary.rows]
    assert f"% of the {summary.line_rate_GB_s:g} GB/s line rate" in report


def test_no_report_has_a_column_no_row_fills(onebox, tmp_path):
    assert tables(GOLDEN.read_text()) and empty_columns(GOLDEN.read_text()) == []
    report = (onebox / "report.md").read_text()
    assert len(tables(report)) >= 4 and empty_columns(report) == []


def test_a_link_planted_at_a_plot_path_is_refused_in_one_line_never_written_through(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RECORDED, run)
    victim = tmp_path / "victim.txt"
    victim.write_text("not a plot")
    (run / "plots" / "bandwidth.png").unlink()
    (run / "plots" / "bandwidth.png").symlink_to(victim)
    done = subprocess.run([sys.executable, "-m", "pdrepro", "analyze", str(run)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    # A progress line, then the one line naming the link and the fix.
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("analysing ") and len(lines) == 2
    assert "bandwidth.png: is a symlink" in lines[1] and "remove the link" in lines[1]
    assert victim.read_text() == "not a plot"


def test_each_plot_is_a_whole_png(onebox):
    made = sorted((onebox / "plots").iterdir())
    assert [p.name for p in made] == ["bandwidth.png", "transfer-vs-size.png", "ttft-split.png"]
    for p in made:
        assert not p.is_symlink() and p.read_bytes().startswith(b"\x89PNG")


def test_the_bandwidth_plot_draws_no_line_rate_for_a_tcp_box(onebox, tmp_path, monkeypatch):
    import matplotlib.axes

    labels: list[str] = []
    real = matplotlib.axes.Axes.legend

    def spy(self, *args, **kwargs):
        labels.extend(self.get_legend_handles_labels()[1])
        return real(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "legend", spy)
    summary = Summary.model_validate(json.loads((onebox / "summary.json").read_text()))
    render_plots(summary, tmp_path / "tcp")
    assert not any("line rate" in label for label in labels)
    assert "Mooncake engine alone, same box" in labels
    labels.clear()
    render_plots(_over_rdma(summary), tmp_path / "rdma")
    assert any(re.search(r"line rate 12\.5 GB/s", label) for label in labels)


def _recorded_data(onebox: Path) -> dict:
    return json.loads((onebox / "summary.json").read_text())


def test_records_of_fewer_servers_than_planned_leave_the_scenarios_title(onebox):
    # The sweep reads /server_info only of the servers it was pointed at: one prefill and one decode of a
    # 2P2D run is no count of what ran, so the title is the plan's, not "1P1D".
    data = _recorded_data(onebox)
    data["scenario"]["topology"]["prefill"]["nodes"] = 2
    data["scenario"]["title"] = "2P2D planned"
    assert render_report(data).splitlines()[0] == "# KV transfer report: 2P2D planned"


def test_servers_on_two_nodes_are_counted_from_their_own_records(onebox):
    data = _recorded_data(onebox)
    prov = data["provenance"]
    prov["endpoints"] = {"router": "http://10.0.0.1:8000", "prefill": "http://10.0.0.1:30000",
                         "decode": "http://10.0.0.2:30001"}
    for role in ("prefill", "decode"):
        prov["server_info"][role]["tp_size"] = 8
    assert render_report(data).splitlines()[0] == ("# KV transfer report: 1P1D Qwen2.5-0.5B-Instruct at TP 8, "
                                                   "prefill and decode on two nodes, 16 GPUs in all")


def test_the_relaxed_ordering_knob_is_named_only_where_the_gpu_memory_path_is_the_short_one(onebox):
    summary = _over_rdma(Summary.model_validate(json.loads((onebox / "summary.json").read_text())))
    engine = max(c.engine_GB_s for c in (summary.engine_ceiling or {}).values() if c.engine_GB_s is not None)
    note = "The GPU-memory path is the short one"
    # A fabric that carries more than twice what the engine alone moves in GPU memory: the note, with the knob.
    short = render_report(summary.model_copy(update={"line_rate_GB_s": 3 * engine, "baseline_GB_s": None}))
    section = short.split("## Against the engine alone")[1]
    assert note in section and "MC_IB_PCI_RELAXED_ORDERING=1" in section and "relaxed-ordering row" in section
    assert f"{100 / 3:.0f} % of the line rate" in section
    # The measured host-memory ceiling, where there is one, is the fabric's figure.
    measured_fabric = render_report(summary.model_copy(update={"line_rate_GB_s": 100 * engine,
                                                               "baseline_GB_s": 1.5 * engine}))
    assert note not in measured_fabric
    # The engine alone near the fabric: no note; one box over TCP: never.
    assert note not in render_report(summary.model_copy(update={"line_rate_GB_s": 1.5 * engine}))
    assert note not in (onebox / "report.md").read_text()
