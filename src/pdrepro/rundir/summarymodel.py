"""summary.json as a typed model: what the analysis, a comparison and the smoke write, and what every reader reads.

The report, the plots, the verdicts, publish and the gates read a summary only as this model: each figure
they use is a declared field with its unit, so a summary of the wrong shape is refused once, where it is
loaded (one line naming the file and the key), never deep inside a reader. Its JSON Schema
(``schemas/summary.schema.json``) is what other tools can check a summary against. Each kind owns its row:
LengthRow holds what every kind measures, Row adds what only served requests show (a sweep's, a comparison's),
SmokeRow the smoke's own figures; rows, an issue and the headline are closed to keys no model declares, while
the records a summary carries whole (provenance, transport evidence) accept further keys. The rows live in
summaryrows.py, the shared records in summaryparts.py and summaryscenario.py; readers take them all from here.
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
from .summaryrows import LengthRow, Row, SmokeRow
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
           "HostFacts", "LengthRow", "LogsFacts", "Measured", "Metric", "NicNode", "NicRail", "Pins", "ProofServer",
           "ProvenanceScenario", "Row", "SmokeRow", "Stall", "WhatRan", "Witness",
           "Reference", "ReferenceHeadline", "ReferenceRow", "RolePlan", "RunProvenance", "Scalar",
           "ScenarioModelName", "ServerInfo", "SummaryScenario", "TopologyPlan", "TransportProof"]


class Issue(_Closed):
    """Something the analysis found wrong or doubtful; errors mean incomplete or unreadable inputs (exit 2)."""

    severity: Literal["error", "warning"]
    kind: IssueKind = Field(description="machine-readable kind (issuekind.IssueKind)")
    prompt_len: int | None = Field(default=None, description="the prompt length it concerns, if one")
    message: str = Field(description="one line naming the input and the fix")


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
