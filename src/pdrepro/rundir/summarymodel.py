"""summary.json as a typed model: what the analysis, a comparison and the smoke write, and what every reader reads.

The report, the plots, the verdicts, publish and the gates read a summary only as this model: each figure
they use is a declared field with its unit, so a summary of the wrong shape is refused once, where it is
loaded (one line naming the file and the key), never deep inside a reader. Its JSON Schema
(``schemas/summary.schema.json``) is what other tools can check a summary against. Each kind owns its row:
LengthRow holds what every kind measures, Row adds what only served requests show (a sweep's, a comparison's),
SmokeRow the smoke's own figures; rows, an issue and the headline are closed to keys no model declares, while
the records a summary carries whole (provenance, transport evidence) accept further keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from ..core.strictmodel import load
from .contract import SummarySchemaVersion
from .issuekind import IssueKind
from .portbaseline import BaselinePort, BaselinePorts
from .railmodel import NicRail
from .runprovenance import (
    BenchImage,
    GpuFacts,
    HostFacts,
    LogsFacts,
    Pins,
    ProofServer,
    ProvenanceScenario,
    RunProvenance,
    ServerInfo,
    TransportProof,
)
from .summarybase import Scalar, _Closed, _Open
from .summaryparts import (
    CeilingRow,
    CeilingSource,
    Configuration,
    Measured,
    Metric,
    NicNode,
    Stall,
    WhatRan,
    Witness,
)
from .summaryscenario import (
    Reference,
    ReferenceHeadline,
    ReferenceRow,
    RolePlan,
    ScenarioModelName,
    SummaryScenario,
    TopologyPlan,
)

# Re-exported: readers take every part of a summary from this module.
__all__ = ["BaselinePort", "BaselinePorts", "BenchImage", "CeilingRow", "CeilingSource", "Configuration", "GpuFacts",
           "HostFacts", "LogsFacts", "Measured", "Metric", "NicNode", "NicRail", "Pins", "ProofServer", "ProvenanceScenario",
           "Stall", "WhatRan", "Witness",
           "Reference", "ReferenceHeadline", "ReferenceRow", "RolePlan", "RunProvenance", "Scalar",
           "ScenarioModelName", "ServerInfo", "SummaryScenario", "TopologyPlan", "TransportProof"]

class Issue(_Closed):
    """Something the analysis found wrong or doubtful; errors mean incomplete or unreadable inputs (exit 2)."""

    severity: Literal["error", "warning"]
    kind: IssueKind = Field(description="machine-readable kind (issuekind.IssueKind)")
    prompt_len: int | None = Field(default=None, description="the prompt length it concerns, if one")
    message: str = Field(description="one line naming the input and the fix")


class LengthRow(_Closed):
    """One prompt length of the published table: the figures every kind measures (the KV moved and its
    transfer time). Each kind's row extends it with its own (the served requests' Row, the smoke's SmokeRow);
    closed, so a key no model declares is refused where it is read."""

    prompt_len: int = Field(description="prompt length in tokens")
    requests: int | None = Field(default=None, description="requests completed at this length")
    expected_requests: int | None = Field(default=None, description="requests the sweep sent at this length")
    kv_bytes: int | None = Field(default=None, description="KV cache of one request over all TP ranks, bytes")
    kv_size: str | None = Field(default=None, description="kv_bytes in decimal units (GB/MB), as the published table")
    transfer_samples: int | None = Field(default=None, description="KV transfers measured")
    transfer_ms_median: float | None = Field(default=None, description="KV transfer time, median, milliseconds")
    transfer_ms_mean: float | None = Field(default=None, description="KV transfer time, mean, milliseconds")
    bandwidth_GB_s: float | None = Field(default=None, description="kv_bytes / median transfer time, decimal GB/s")


class Row(LengthRow):
    """One prompt length of served requests (a sweep's, a comparison's configuration's): the shared row and what
    only requests through running servers show (TTFT, the servers' logged phases, the NIC counters)."""

    request_errors: int | None = Field(default=None, description="requests that failed")
    ttft_ms_mean: float | None = Field(default=None, description="time to first token, mean, milliseconds")
    ttft_ms_median: float | None = Field(default=None, description="time to first token, median, milliseconds")
    ttft_ms_p99: float | None = Field(default=None, description="time to first token, 99th percentile, milliseconds")
    transfer_ms_p99: float | None = Field(default=None, description="KV transfer time, 99th percentile, milliseconds")
    utilization_pct: float | None = Field(default=None, description="bandwidth as a share of line_rate_GB_s, percent")
    transfer_share_of_ttft_pct: float | None = Field(default=None,
                                                     description="median transfer time as a share of mean TTFT, percent")
    # Where a request's time goes besides the transfer (analysis/phases.py).
    phase_ms_median: dict[str, float] | None = Field(
        default=None, description="median of each phase the servers logged for this length's measured requests, "
                                  "milliseconds, keyed \"<role>.<phase>\" (the server's key less \"_duration\", e.g. "
                                  "\"prefill.forward\", \"decode.transfer\")")
    phase_samples: dict[str, int] | None = Field(default=None,
                                                 description="requests each phase's median is drawn from, same keys")
    # The analysis' cross-checks of the servers' logs and the bench client's outputs.
    logged_requests: int | None = Field(default=None, description="requests the prefill logs hold after the warm-up")
    kv_size_mismatch_pct: float | None = Field(default=None,
                                               description="logged KV size against the model's, percent (signed)")
    requested_output_len_min: int | None = Field(default=None, description="fewest output tokens a request asked for")
    output_tokens_min: int | None = Field(default=None, description="fewest output tokens a request generated")
    output_tokens_basis: str | None = Field(default=None, description="how output_tokens_min was counted")
    # The NIC witness (analysis/witness.py).
    nic_kv_share_pct: float | None = Field(default=None, description="bytes the NICs moved as a share of the KV, percent")
    nic_rate_GB_s: float | None = Field(default=None, description="the NIC counters' average rate, decimal GB/s")
    nic_problem: str | None = Field(default=None, description="why the NIC figure is missing, if it is")
    nic_nodes: dict[str, NicNode] | None = Field(default=None, description="each node's counter figures, by role")
    nic_rails: list[NicRail] | None = Field(default=None, description="each port's figures, the rails judged")
    nic_rails_note: str | None = Field(default=None, description="why no port is judged as a rail, if none is")
    # Written for every row (contract.result_row); the analysis fills them from the prefill log and the bench client.
    logged_input_len: int | None = Field(default=None, description="prompt tokens the prefill log shows per request")
    logged_kv_bytes: float | None = Field(default=None, description="KV bytes the prefill log shows per request (its "
                                                                    "MiB figure times TP, median)")
    cached_tokens_max: int | None = Field(default=None, description="most prompt tokens a request took from the cache")
    output_tokens_total: int | None = Field(default=None, description="output tokens the bench client counted, all "
                                                                      "requests")
    output_tokens_retokenized: int | None = Field(default=None, description="the same, counted again from the text")


class SmokeRow(LengthRow):
    """A smoke's row: the shared row and the smoke's own transfer-by-transfer figures (smoke/summary.py)."""

    # Keys every row of summary.json has carried (contract.result_row writes them), which a smoke has no figure
    # for: declared as always null, so its summary.json keeps its keys and a figure there is refused, not read.
    request_errors: None = Field(default=None, description="none: a smoke sends no request (always null)")
    ttft_ms_mean: None = Field(default=None, description="none: a smoke has no TTFT (always null)")
    ttft_ms_median: None = Field(default=None, description="none: a smoke has no TTFT (always null)")
    ttft_ms_p99: None = Field(default=None, description="none: a smoke has no TTFT (always null)")
    transfer_ms_p99: None = Field(default=None, description="none: see transfer_ms_max (always null)")
    utilization_pct: None = Field(default=None, description="none: a smoke has no link's line rate (always null)")
    transfer_share_of_ttft_pct: None = Field(default=None, description="none: a smoke has no TTFT (always null)")
    logged_input_len: None = Field(default=None, description="none: a smoke reads no server log (always null)")
    logged_kv_bytes: None = Field(default=None, description="none: a smoke reads no server log (always null)")
    kv_size_mismatch_pct: None = Field(default=None, description="none: a smoke reads no server log (always null)")
    cached_tokens_max: None = Field(default=None, description="none: a smoke has no prefix cache (always null)")

    checked_transfers: int | None = Field(default=None, description="transfers whose bytes were checked")
    failed_transfers: int | None = Field(default=None, description="transfers that delivered wrong bytes, all ways")
    failed_checks: int | None = Field(default=None, description="Mooncake transfers that delivered wrong bytes")
    socket_ms_median: float | None = Field(default=None, description="socket copy time, median, milliseconds")
    socket_bandwidth_GB_s: float | None = Field(default=None, description="socket copy bandwidth, decimal GB/s")
    mooncake_vs_socket: float | None = Field(default=None, description="Mooncake's bandwidth over the socket's")
    transfer_ms_min: float | None = Field(default=None, description="KV transfer time, fastest, milliseconds")
    transfer_ms_max: float | None = Field(default=None, description="KV transfer time, slowest, milliseconds")
    socket_ms_min: float | None = Field(default=None, description="socket copy time, fastest, milliseconds")
    socket_ms_max: float | None = Field(default=None, description="socket copy time, slowest, milliseconds")
    verified: bool | None = Field(default=None, description="every Mooncake transfer delivered the right bytes")
    socket_verified: bool | None = Field(default=None, description="every socket copy delivered the right bytes")
    mooncake_stall: Stall | None = Field(default=None, description="Mooncake's transfers split in two groups")
    socket_stall: Stall | None = Field(default=None, description="the socket copies split in two groups")
    transfer_ms_all: list[float] | None = Field(default=None, description="every timed Mooncake transfer, milliseconds")
    socket_ms_all: list[float] | None = Field(default=None, description="every timed socket copy, milliseconds")
    # The smoke's NIXL arm (smoke/summary.py): present only in a run that asked for it (--backends ...,nixl).
    nixl_ms_median: float | None = Field(default=None, description="NIXL transfer time, median, milliseconds")
    nixl_ms_mean: float | None = Field(default=None, description="NIXL transfer time, mean, milliseconds")
    nixl_ms_min: float | None = Field(default=None, description="NIXL transfer time, fastest, milliseconds")
    nixl_ms_max: float | None = Field(default=None, description="NIXL transfer time, slowest, milliseconds")
    nixl_ms_all: list[float] | None = Field(default=None, description="every timed NIXL transfer, milliseconds")
    nixl_bandwidth_GB_s: float | None = Field(default=None,
                                              description="kv_bytes / median NIXL transfer time, decimal GB/s")
    nixl_verified: bool | None = Field(default=None, description="every NIXL transfer delivered the right bytes")
    nixl_failed_checks: int | None = Field(default=None, description="NIXL transfers that delivered wrong bytes")
    nixl_vs_socket: float | None = Field(default=None, description="NIXL's bandwidth over the socket's")
    nixl_stall: Stall | None = Field(default=None, description="NIXL's transfers split in two groups")


class Headline(_Closed):
    """The figures the published benchmark leads with; empty when no length was measured."""

    peak_bandwidth_GB_s: float | None = Field(default=None, description="highest row bandwidth, decimal GB/s")
    peak_bandwidth_prompt_len: int | None = Field(default=None, description="prompt length of that row, tokens")
    peak_utilization_pct: float | None = Field(default=None, description="that row's share of line rate, percent")
    longest_prompt_len: int | None = Field(default=None, description="longest measured prompt length, tokens")
    transfer_share_at_longest_pct: float | None = Field(default=None,
                                                        description="transfer share of TTFT at that length, percent")


class RdmaDevices(_Open):
    """RDMA devices on the nodes: found (True), none on every node (False), not known (None)."""

    found: bool | None = None
    devices: dict[str, list[str] | None] = Field(default_factory=dict)
    evidence: list[str] = Field(default_factory=list)


class TransportEvidence(_Open):
    servers: dict[str, str] = Field(default_factory=dict, description="each server's transport line, by role")
    proof: TransportProof | None = Field(default=None, description="the sweep's proof, None when it recorded none")
    rdma_devices: RdmaDevices = Field(default_factory=RdmaDevices)
    conflicts: list[str] = Field(default_factory=list,
                                 description="pairs of the run's own transport sources that disagree, each named")
    backend: str | None = Field(default=None, description="the transfer backend whose log lines were read (its "
                                "registry name); None in summaries older than the field, whose runs used the default")
















class Summary(_Open):
    """summary.json of a sweep's run; the smoke's and a comparison's extend it (SmokeSummary,
    ComparisonSummary), and ``model_for`` picks the one the summary records. The class variables say what a
    summary of the kind can be judged and drawn on, so a reader asks them, never the summary's ``source``."""

    # The rows hold a TTFT the bench client measured (the smoke times bare transfers between containers).
    measures_ttft: ClassVar[bool] = True
    # The KV crossed a fabric whose line rate and NIC counters bear on the figures.
    has_fabric: ClassVar[bool] = True
    # The summary sets configurations side by side (a comparison), judged on completeness, not bounds.
    compares_configurations: ClassVar[bool] = False

    schema_version: SummarySchemaVersion
    kind: Literal["comparison"] | None = Field(default=None, description="set only on a comparison's summary")
    scenario: SummaryScenario = Field(description="the scenario as run (see scenario.schema.json)")
    scenario_fingerprint: str = Field(description="sha256 of the canonical scenario")
    source: Literal["sglang", "smoke"] = Field(description="what measured the rows")
    transport: str | None = Field(default=None, description="the transport Mooncake's log shows it used "
                                                            "(rdma, tcp, mixed, unknown)")
    transport_evidence: TransportEvidence | None = Field(
        default=None, description="each server's transport line, the sweep's proof and the RDMA devices the sweep "
                                  "found on the nodes, which the transport and NIC witness checks judge")
    what_ran: list[WhatRan] | None = Field(
        default=None, description="per component (SGLang per server, router, Mooncake, torch, CUDA): what ran, its "
                                  "pin in docker/versions.env and whether they match (null: not recorded)")
    line_rate_GB_s: float | None = Field(default=None, description="the scenario link's line rate, decimal GB/s")
    rows: list[Row]
    headline: Headline = Field(default_factory=Headline)
    issues: list[Issue]
    provenance: RunProvenance | None = Field(
        default=None, description="versions, hosts and settings of the run (a comparison: one record per "
                                  "configuration, by its name)")
    witness: Witness | None = Field(default=None, description="how the NIC counters were held against the KV")
    analysis_code: str | None = Field(default=None, description="the pdrepro release and summary version that wrote it")
    inputs_signature: str | None = Field(default=None, description="hash of the raw inputs the summary was made from")
    baseline_GB_s: float | None = Field(
        default=None, description="a measured reference line, decimal GB/s: in a sweep, the fabric ceiling "
                                  "`pdrepro baseline` measured; in a smoke, the plain socket copy at the largest size")
    baseline_ports: BaselinePorts | None = Field(
        default=None, description="`pdrepro baseline`'s ib_write_bw figures per port, alone and all at once, "
                                  "against each port's own line rate")
    metrics: list[Metric] | None = Field(
        default=None, description="the servers' /metrics transfer figures, one entry per scraped file")
    engine_ceiling: dict[str, CeilingRow] | None = Field(
        default=None, description="per prompt length: the per-request KV bandwidth, what the Mooncake engine alone "
                                  "moved on the same box (decimal GB/s) and their ratio")
    engine_ceiling_source: CeilingSource | None = Field(
        default=None, description="the ceiling's file in the run (engine-ceiling/result.json of gpu-check, or "
                                  "engine-ceiling.json) and the transport the engine used there")
    smoke: dict[str, Any] | None = Field(default=None, description="the smoke test's own findings")
    configurations: dict[str, Configuration] | None = Field(default=None,
                                                            description="a comparison's measured and published figures")
    comparison: dict[str, Any] | None = Field(default=None, description="a comparison's relative changes, percent")

    def configuration_provenance(self) -> dict[str, RunProvenance | None]:
        """A comparison's provenance, one record (or None) per configuration it names."""
        found = self.provenance.model_extra or {} if self.provenance is not None else {}
        return {name: None if not found.get(name) else RunProvenance.model_validate(found.get(name))
                for name in (self.configurations or {})}

    def rows_by_length(self) -> dict[int, Row]:
        return {r.prompt_len: r for r in self.rows}

    def length_rows(self) -> list[LengthRow]:
        """Every row as the shared row, whatever the kind (a smoke's rows are SmokeRows, not Rows)."""
        return list(self.rows)

    def served_rows(self) -> list[Row]:
        """The rows of requests served through running servers (none in a smoke, which times bare transfers):
        what a reader of TTFT, the servers' phases or the NIC counters reads."""
        return [r for r in self.rows if isinstance(r, Row)]

    def input_errors(self) -> list[Issue]:
        """Issues that mean the run's inputs are incomplete or unreadable (exit status 2)."""
        return [i for i in self.issues if i.severity == "error"]

    def to_json(self) -> dict[str, Any]:
        """The summary as summary.json holds it: the keys its builder set, in the model's order."""
        return self.model_dump(exclude_unset=True)


class SmokeSummary(Summary):
    """summary.json of a smoke test: its rows carry the socket comparison (SmokeRow)."""

    measures_ttft: ClassVar[bool] = False
    has_fabric: ClassVar[bool] = False

    source: Literal["smoke"] = Field(description="what measured the rows")
    rows: list[SmokeRow]  # type: ignore[assignment]  # a smoke's rows are the shared row and its own figures


class ComparisonSummary(Summary):
    """summary.json of a comparison: configurations side by side, one provenance record per configuration."""

    compares_configurations: ClassVar[bool] = True

    kind: Literal["comparison"] = Field(description="set only on a comparison's summary")

    @model_validator(mode="after")
    def _configurations_recorded(self) -> ComparisonSummary:
        # A comparison's provenance holds one record per configuration: each must have a record's shape.
        if self.provenance is not None:
            for name, record in (self.provenance.model_extra or {}).items():
                if record is not None and not isinstance(record, dict):
                    raise ValueError(f"provenance.{name} is not a record of a configuration")
        return self


# The model of each kind of summary.json, keyed by what the summary records (its "kind", else its "source"):
# a dictionary, so that the choice is data and a new kind's model is one line here.
_BY_KIND: dict[str, type[Summary]] = {"comparison": ComparisonSummary}
_BY_SOURCE: dict[str, type[Summary]] = {"smoke": SmokeSummary}


def model_for(data: Mapping[str, Any]) -> type[Summary]:
    """The model of the kind ``data`` (a summary as summary.json holds it) records; a sweep's where it records
    none this release knows (the model then names what is wrong)."""
    kind, source = data.get("kind"), data.get("source")
    picked = _BY_KIND.get(kind) if isinstance(kind, str) else None
    if picked is None and isinstance(source, str):
        picked = _BY_SOURCE.get(source)
    return picked or Summary


def as_summary(summary: Summary | Mapping[str, Any]) -> Summary:
    """``summary`` as the model: a summary dict (as a builder or summary.json holds it) is validated once here."""
    if isinstance(summary, Summary):
        return summary
    data = dict(summary)
    return model_for(data).model_validate(data)


def build(fields: dict[str, Any]) -> dict[str, Any]:
    """A summary built as the model from its builder's fields (rows, headline and issues become their
    models, so a field of the wrong shape fails where it is made, not in a reader), in the form
    summary.json holds. A field of the wrong shape comes from a run file of the wrong shape (the summary
    carries provenance.json whole, for one): one line naming the key, exit 2, never a traceback."""
    summary = load(model_for(fields), fields, "the summary made from the run's files",
                   fix="the run file that holds it (provenance.json for provenance.*) has a value of the wrong type: "
                       "restore it from the run's source or fix it, then run again")
    return summary.to_json()
