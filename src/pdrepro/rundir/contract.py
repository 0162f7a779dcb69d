"""The output contract: what every result the bundle writes looks like, and how it is written.

A real run's analysis, a comparison and the smoke all produce one summary.json
shape (schema version, rows, headline, issues with a severity); the report, the
plots and the checks read only that. This module sits at the bottom of the
package (it imports nothing of it but units and errors), so every step that
writes a result can use it without reaching up into another step.

Files are written atomically by the shared safe writer (pdrepro.core.safewrite): into a fresh
temporary file in the same folder, synced, then renamed over the target, so a reader (or a crash)
never sees half a file, and no link planted in the run is written through.
JSON is strict: NaN and infinity, which JSON cannot hold, are refused in one line.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Literal, get_args

from .. import __version__
from ..core.errors import UserError
from ..core.safewrite import unwritable as unwritable  # re-exported: the run's writers name it here
from ..core.safewrite import write_file
from ..core.units import bandwidth_GB_s, human_bytes
from .issuekind import IssueKind

# Version of summary.json (run, comparison and smoke summaries alike). The scenario file
# carries its own version (scenario.SCENARIO_SCHEMA_VERSION): the two documents change apart.
# The model's field takes the Literal (a type checker reads no constant inside Literal[...]); the number derives from it.
SummarySchemaVersion = Literal[1]
SUMMARY_SCHEMA_VERSION: int = get_args(SummarySchemaVersion)[0]

ERROR, WARNING = "error", "warning"


def issue(severity: str, kind: IssueKind, message: str, prompt_len: int | None = None) -> dict:
    # IssueKind(kind): a kind that is not declared there is a bug here, not a new kind.
    return {"severity": severity, "kind": IssueKind(kind).value, "prompt_len": prompt_len, "message": message}


def input_errors(summary: dict) -> list[dict]:
    """Issues that mean the run's inputs are incomplete or unreadable (exit status 2)."""
    return [i for i in summary.get("issues", []) if i.get("severity") == ERROR]


def result_row(prompt_len: int, kv_bytes: int, *, line_rate_GB_s: float | None, expected_requests: int | None,
               requests: int | None = None, request_errors: int | None = None,
               ttft_ms: tuple = (None, None, None), transfer_samples: int = 0,
               transfer_ms_median: float | None = None, transfer_ms_mean: float | None = None,
               transfer_ms_p99: float | None = None, **extra) -> dict:
    """One row of the published table, whoever measured it: the figures derived from the
    transfer time (bandwidth, share of line rate, share of TTFT) are computed here only."""
    ttft_mean, ttft_median, ttft_p99 = ttft_ms
    bandwidth = bandwidth_GB_s(kv_bytes, transfer_ms_median / 1000) if transfer_ms_median else None
    row = {
        "prompt_len": prompt_len, "requests": requests, "expected_requests": expected_requests,
        "request_errors": request_errors,
        "ttft_ms_mean": ttft_mean, "ttft_ms_median": ttft_median, "ttft_ms_p99": ttft_p99,
        "kv_bytes": kv_bytes, "kv_size": human_bytes(kv_bytes), "transfer_samples": transfer_samples,
        "transfer_ms_median": transfer_ms_median, "transfer_ms_mean": transfer_ms_mean,
        "transfer_ms_p99": transfer_ms_p99,
        "bandwidth_GB_s": bandwidth,
        "utilization_pct": bandwidth / line_rate_GB_s * 100 if bandwidth is not None and line_rate_GB_s else None,
        "transfer_share_of_ttft_pct": (transfer_ms_median / ttft_mean * 100
                                       if bandwidth is not None and ttft_mean else None),
        "logged_input_len": None, "logged_kv_bytes": None, "kv_size_mismatch_pct": None, "cached_tokens_max": None,
    }
    row.update(extra)
    return row


def headline(rows: list[dict]) -> dict:
    measured = [r for r in rows if r.get("bandwidth_GB_s") is not None]
    if not measured:
        return {}
    peak = max(measured, key=lambda r: r["bandwidth_GB_s"])
    longest = max(measured, key=lambda r: r["prompt_len"])
    return {
        "peak_bandwidth_GB_s": peak["bandwidth_GB_s"],
        "peak_bandwidth_prompt_len": peak["prompt_len"],
        "peak_utilization_pct": peak.get("utilization_pct"),
        "longest_prompt_len": longest["prompt_len"],
        "transfer_share_at_longest_pct": longest.get("transfer_share_of_ttft_pct"),
    }


def analysis_code_stamp() -> str:
    """Which pdrepro wrote a summary: one written by another release is stale, not edited.
    (Between releases, `pdrepro analyze RUN` rewrites a summary the code has outgrown.)"""
    return f"pdrepro {__version__}, summary schema {SUMMARY_SCHEMA_VERSION}"


def stamp(summary: dict, signature: str) -> dict:
    """Marks ``summary`` with what made it: the run's inputs (their signature, taken before they
    were read, so an input changing meanwhile leaves the summary stale) and the analysing code."""
    summary.update(inputs_signature=signature, analysis_code=analysis_code_stamp())
    return summary


def is_current(stored: dict, signature: str, fingerprint: str) -> bool:
    """Whether a stored summary was made from these very inputs, scenario and analysing code:
    then it must agree with a fresh analysis, and where it does not it was edited afterwards."""
    return (stored.get("inputs_signature") == signature and stored.get("scenario_fingerprint") == fingerprint
            and stored.get("analysis_code") == analysis_code_stamp())


def _non_finite(data, where: str = "") -> tuple[str, float] | None:
    """(key path, value) of the first NaN or infinity in ``data``."""
    if isinstance(data, float) and not math.isfinite(data):
        return where or "the top level", data
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, (list, tuple)) else ()
    for key, value in items:
        path = f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else str(key)
        found = _non_finite(value, path)
        if found:
            return found
    return None


def dumps_json(data, path: Path, **kwargs) -> str:
    """``json.dumps`` that refuses NaN and infinity with one line naming ``path`` and the figure."""
    try:
        return json.dumps(data, allow_nan=False, **kwargs) + "\n"
    except ValueError:
        where, value = _non_finite(data) or ("a figure", math.nan)
        raise UserError(f"{path}: not written: {where} is {value}, which is no measurement (JSON cannot hold it); "
                        "an input carries a broken figure: fix the input named in the other messages and run again") from None


def write_atomic(path: Path, data: str | bytes, root: Path | None = None) -> None:
    """Write ``data`` to ``path`` so that a reader sees the old file or the whole new one, never a part, and
    never through a link planted at the path or at a temporary name (pdrepro.core.safewrite). A failure is
    one line naming the file and ``root`` (the folder to make writable)."""
    write_file(path, data, "pdrepro", root)


def write_json_atomic(path: Path, data, root: Path | None = None, **kwargs) -> None:
    """Strict JSON (see ``dumps_json``) written with ``write_atomic``."""
    write_atomic(path, dumps_json(data, path, **kwargs), root)
