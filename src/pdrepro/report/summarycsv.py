"""summary.csv: a summary's rows for spreadsheets, read as its model (summarymodel.Summary)."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

from ..rundir.summarymodel import Row, Summary, as_summary

CSV_COLUMNS = ("prompt_len", "requests", "request_errors", "ttft_ms_mean", "ttft_ms_median", "ttft_ms_p99", "kv_bytes",
               "transfer_ms_median", "transfer_ms_mean", "bandwidth_GB_s", "utilization_pct",
               "transfer_share_of_ttft_pct", "kv_size_mismatch_pct")


def _csv_cells(row: Row) -> list[Any]:
    """The row's CSV_COLUMNS, in their order."""
    figures = (row.prompt_len, row.requests, row.request_errors, row.ttft_ms_mean, row.ttft_ms_median,
               row.ttft_ms_p99, row.kv_bytes, row.transfer_ms_median, row.transfer_ms_mean, row.bandwidth_GB_s,
               row.utilization_pct, row.transfer_share_of_ttft_pct, row.kv_size_mismatch_pct)
    return ["" if v is None else v for v in figures]


def render_csv(summary: Summary | Mapping[str, Any]) -> str:
    """The rows for spreadsheets: full precision, units in the column names, empty where not measured."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in as_summary(summary).rows:
        writer.writerow(_csv_cells(row))
    return buf.getvalue()
