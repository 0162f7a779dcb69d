"""summary.json as a typed model: what the analysis, a comparison and the smoke write.

The report, the plots, the checks and anyone's own tooling read this file; the
model names each figure with its unit, and its JSON Schema
(``schemas/summary.schema.json``) is what other tools can check a summary
against. Rows carry more than the fields named here (the smoke adds its
socket comparison, the analysis its log cross-checks), so rows and the summary
itself accept further keys; an issue and the headline are closed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .contract import SummarySchemaVersion
from .issuekind import IssueKind


def _key(name: str, _info) -> str:
    return name  # schema titles are the keys as they appear in summary.json


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, field_title_generator=_key)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, field_title_generator=_key)


class Issue(_Closed):
    """Something the analysis found wrong or doubtful; errors mean incomplete or unreadable inputs (exit 2)."""

    severity: Literal["error", "warning"]
    kind: IssueKind = Field(description="machine-readable kind (issuekind.IssueKind)")
    prompt_len: int | None = Field(default=None, description="the prompt length it concerns, if one")
    message: str = Field(description="one line naming the input and the fix")


class Row(_Open):
    """One prompt length of the published table."""

    prompt_len: int = Field(description="prompt length in tokens")
    requests: int | None = Field(default=None, description="requests completed at this length")
    expected_requests: int | None = Field(default=None, description="requests the sweep sent at this length")
    request_errors: int | None = Field(default=None, description="requests that failed")
    ttft_ms_mean: float | None = Field(default=None, description="time to first token, mean, milliseconds")
    ttft_ms_median: float | None = Field(default=None, description="time to first token, median, milliseconds")
    ttft_ms_p99: float | None = Field(default=None, description="time to first token, 99th percentile, milliseconds")
    kv_bytes: int | None = Field(default=None, description="KV cache of one request over all TP ranks, bytes")
    kv_size: str | None = Field(default=None, description="kv_bytes in decimal units (GB/MB), as the published table")
    transfer_samples: int | None = Field(default=None, description="KV transfers measured")
    transfer_ms_median: float | None = Field(default=None, description="KV transfer time, median, milliseconds")
    transfer_ms_mean: float | None = Field(default=None, description="KV transfer time, mean, milliseconds")
    transfer_ms_p99: float | None = Field(default=None, description="KV transfer time, 99th percentile, milliseconds")
    bandwidth_GB_s: float | None = Field(default=None, description="kv_bytes / median transfer time, decimal GB/s")
    utilization_pct: float | None = Field(default=None, description="bandwidth as a share of line_rate_GB_s, percent")
    transfer_share_of_ttft_pct: float | None = Field(default=None,
                                                     description="median transfer time as a share of mean TTFT, percent")


class Headline(_Closed):
    """The figures the published benchmark leads with; empty when no length was measured."""

    peak_bandwidth_GB_s: float | None = Field(default=None, description="highest row bandwidth, decimal GB/s")
    peak_bandwidth_prompt_len: int | None = Field(default=None, description="prompt length of that row, tokens")
    peak_utilization_pct: float | None = Field(default=None, description="that row's share of line rate, percent")
    longest_prompt_len: int | None = Field(default=None, description="longest measured prompt length, tokens")
    transfer_share_at_longest_pct: float | None = Field(default=None,
                                                        description="transfer share of TTFT at that length, percent")


class Summary(_Open):
    """summary.json of a run, a comparison or a smoke test."""

    schema_version: SummarySchemaVersion
    kind: Literal["comparison"] | None = Field(default=None, description="set only on a comparison's summary")
    scenario: dict[str, Any] = Field(description="the scenario as run (see scenario.schema.json)")
    scenario_fingerprint: str = Field(description="sha256 of the canonical scenario")
    source: Literal["sglang", "smoke"] = Field(description="what measured the rows")
    transport: str | None = Field(default=None, description="the transport Mooncake's log shows it used "
                                                            "(rdma, tcp, mixed, unknown)")
    transport_evidence: dict[str, Any] | None = Field(
        default=None, description="each server's transport line, the sweep's proof and the RDMA devices the sweep "
                                  "found on the nodes, which the transport and NIC witness checks judge")
    what_ran: list[dict[str, Any]] | None = Field(
        default=None, description="per component (SGLang per server, router, Mooncake, torch, CUDA): what ran, its "
                                  "pin in docker/versions.env and whether they match (null: not recorded)")
    line_rate_GB_s: float | None = Field(default=None, description="the scenario link's line rate, decimal GB/s")
    rows: list[Row]
    headline: Headline = Field(default_factory=Headline)
    issues: list[Issue]
    provenance: dict[str, Any] | None = Field(default=None, description="versions, hosts and settings of the run")
    witness: dict[str, Any] | None = Field(default=None, description="how the NIC counters were held against the KV")
    analysis_code: str | None = Field(default=None, description="the pdrepro release and summary version that wrote it")
    inputs_signature: str | None = Field(default=None, description="hash of the raw inputs the summary was made from")
    baseline_GB_s: float | None = Field(default=None, description="measured fabric ceiling, decimal GB/s")
    metrics: list[dict[str, Any]] | None = Field(
        default=None, description="the servers' /metrics transfer figures, one entry per scraped file")
    engine_ceiling: dict[str, Any] | None = Field(
        default=None, description="per prompt length: the per-request KV bandwidth, what the Mooncake engine alone "
                                  "moved on the same box (decimal GB/s) and their ratio")
    engine_ceiling_source: dict[str, Any] | None = Field(
        default=None, description="the ceiling's file in the run (engine-ceiling/result.json of gpu-check, or "
                                  "engine-ceiling.json) and the transport the engine used there")
    smoke: dict[str, Any] | None = Field(default=None, description="the smoke test's own findings")
    configurations: dict[str, Any] | None = Field(default=None,
                                                  description="a comparison's measured and published figures")
    comparison: dict[str, Any] | None = Field(default=None, description="a comparison's relative changes, percent")

    def to_json(self) -> dict[str, Any]:
        """The summary as summary.json holds it: the keys its builder set, in the model's order."""
        return self.model_dump(exclude_unset=True)


def build(fields: dict[str, Any]) -> dict[str, Any]:
    """A summary built as the model from its builder's fields (rows, headline and issues become their
    models, so a field of the wrong shape fails where it is made, not in a reader), in the form
    summary.json holds."""
    return Summary.model_validate(fields).to_json()
