"""The scenario as a summary records it: the parts of the scenario as run, and the published reference it
names, that the report and the verdicts read (summarymodel re-exports them)."""

from __future__ import annotations

from pydantic import Field

from .summarybase import _Open


class ReferenceRow(_Open):
    """One row of the published table the scenario names."""

    prompt_len: int
    ttft_ms: float | None = None
    transfer_ms: float | None = None
    bandwidth_GB_s: float | None = None
    utilization_pct: float | None = None


class ReferenceHeadline(_Open):
    """The published headline; its transfer share is named per length (transfer_share_of_ttft_at_<L>_pct)."""

    peak_bandwidth_GB_s: float | None = None
    peak_utilization_pct: float | None = None

    def transfer_share_at(self, prompt_len: int) -> float | None:
        """The published transfer share of TTFT at ``prompt_len``, percent (None when not published)."""
        value = (self.model_extra or {}).get(f"transfer_share_of_ttft_at_{prompt_len}_pct")
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class Reference(_Open):
    source: str | None = None
    rows: list[ReferenceRow] = Field(default_factory=list)
    headline: ReferenceHeadline = Field(default_factory=ReferenceHeadline)


class ScenarioModelName(_Open):
    """The scenario's model, as far as a report names it."""

    name: str | None = Field(default=None, description="the model the scenario serves, as its title names it")


class RolePlan(_Open):
    """How many servers of one role the scenario planned."""

    nodes: int | None = None
    servers_per_node: int | None = None

    def servers(self) -> int | None:
        return self.nodes * self.servers_per_node if self.nodes and self.servers_per_node else None


class TopologyPlan(_Open):
    """The scenario's planned servers per role (the run's records may hold only those the sweep reached)."""

    prefill: RolePlan | None = None
    decode: RolePlan | None = None


class SummaryScenario(_Open):
    """The parts of the scenario as run (scenario.schema.json) that the report and the verdicts read."""

    name: str | None = None
    title: str | None = None
    model: ScenarioModelName | None = None
    topology: TopologyPlan | None = None
    transport: str = "rdma"
    reference: Reference | None = None
