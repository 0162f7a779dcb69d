"""The A/B's one plot (report/abplot.py): the arms side by side on the client's TTFT only, drawn from the recorded
A/B's summary; the report links it; a summary without a TTFT draws nothing and links nothing."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib.image as mpimg

from pdrepro.report.ab import render
from pdrepro.report.abplot import PLOT, ttft_png
from pdrepro.rundir.absummary import AbSummary

RECORDED = Path(__file__).resolve().parents[1] / "recorded" / "h200-ab-mooncake-tcp-vs-nixl-sglang-0.5.15.post1"


def _summary() -> AbSummary:
    return AbSummary.model_validate_json((RECORDED / "ab" / "ab-summary.json").read_text())


def test_the_plot_is_a_whole_png_and_the_report_links_it():
    summary = _summary()
    png = ttft_png(summary)
    assert png is not None and png.startswith(b"\x89PNG\r\n\x1a\n")
    height, width, _ = mpimg.imread(io.BytesIO(png)).shape
    assert width > 400 and height > 300
    assert f"]({PLOT})" in render(summary)


def test_no_ttft_no_plot_and_no_link():
    summary = _summary()
    bare = summary.model_copy(update={"lengths": [
        length.model_copy(update={"arms": [a.model_copy(update={"ttft_ms_median": None, "ttft_ms_p99": None,
                                                                 "ttft_ms_mean": None}) for a in length.arms]})
        for length in summary.lengths]})
    assert ttft_png(bare) is None and PLOT not in render(bare)
