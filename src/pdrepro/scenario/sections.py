"""The sections of a scenario file (model, parallel, topology, link, sweep, reference, thresholds):
each validated on its own, with the checks that need only its own fields. ``model.Scenario`` puts
them together and holds the rules that span sections."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ..core.errors import UserError
from ..core.roles import Role
from ..core.strictmodel import FiniteNumber, IntBounds, NumberBounds, Record, StrictInt
from .derivation import ThresholdRule
from .kvsize import DType, Geometry
from .portbaseline import MIN_PORT_BASELINE_FRACTION

TP = Annotated[int, IntBounds(1, 64)]
# The bounds that recur across the file's fields.
PositiveInt = Annotated[int, IntBounds(1)]
CountInt = Annotated[int, IntBounds(0)]
NonNegative = Annotated[float, NumberBounds(ge=0)]
Fraction = Annotated[float, NumberBounds(0, 1)]
Percent = Annotated[float, NumberBounds(0, 100)]


class Model(Record):
    name: str
    dtype: DType
    # Exactly one of these two: the geometry inline, or the model's config.json
    # (a path relative to the scenario file, resolved at load).
    geometry: Geometry | None = None
    config_json: str | None = None

    def check(self, source: str) -> None:
        if (self.geometry is None) == (self.config_json is None):
            raise UserError(f"{source}: model needs exactly one of geometry or config_json")


class Parallel(Record):
    prefill_tp: TP
    decode_tp: TP

    def tp(self, role: str) -> int:
        """The TP of each server of ROLE."""
        return {Role.PREFILL: self.prefill_tp, Role.DECODE: self.decode_tp}[Role(role)]


class RoleNodes(Record):
    """How many nodes one role (prefill or decode) runs on, and how many
    servers each of those nodes runs (each with that role's TP)."""

    nodes: Annotated[int, IntBounds(1, 256)] = 1
    servers_per_node: Annotated[int, IntBounds(1, 64)] = 1


class Topology(Record):
    """xPyD: prefill and decode nodes behind one router. TP per server is
    ``parallel``; unset, both roles run one server on one node (1P1D)."""

    prefill: RoleNodes = Field(default_factory=RoleNodes)
    decode: RoleNodes = Field(default_factory=RoleNodes)

    def of(self, role: str) -> RoleNodes:
        """The nodes of ROLE (prefill or decode)."""
        return {Role.PREFILL: self.prefill, Role.DECODE: self.decode}[Role(role)]

    def servers(self, role: str) -> int:
        """Servers of ``role`` ("prefill" or "decode") over all its nodes."""
        nodes = self.of(role)
        return nodes.nodes * nodes.servers_per_node

    @property
    def label(self) -> str:
        return f"{self.prefill.nodes * self.prefill.servers_per_node}P{self.decode.nodes * self.decode.servers_per_node}D"


class Link(Record):
    """The fabric of one node; the utilization denominator is derived from it."""

    nics_per_node: Annotated[int, IntBounds(1, 64)] = Field(description="RDMA NICs per node that carry the KV transfer")
    nic_rate_Gb_s: Annotated[float, NumberBounds(ge=1)] = Field(description="line rate of one NIC, Gb/s (decimal)")

    @property
    def line_rate_GB_s(self) -> float:
        return self.nics_per_node * self.nic_rate_Gb_s / 8


class Sweep(Record):
    # No released model reads more than about 10 M tokens; a longer "length" is a typo.
    prompt_lens: tuple[Annotated[int, IntBounds(1, 10_000_000)], ...] = Field(
        description="input lengths to sweep, tokens, each once")
    num_prompts: PositiveInt = Field(description="requests per length")
    output_len: PositiveInt = Field(description="output tokens asked of each request")
    max_concurrency: PositiveInt | None = Field(default=None, description="requests in flight at most; null: open loop")
    request_rate: Annotated[float, NumberBounds(ge=0, unbounded=True)] = Field(
        description="requests per second; inf sends them all at once")
    random_range_ratio: Fraction = Field(description="the random dataset draws lengths from [ratio x length, length]")
    seed: StrictInt = Field(description="seed of the bench client's random dataset")
    warmup_requests: CountInt = Field(description="requests the bench client sends before it measures each length")

    def check(self, source: str) -> None:
        if not self.prompt_lens:
            raise UserError(f"{source}: sweep.prompt_lens is empty; list at least one prompt length")
        if len(set(self.prompt_lens)) != len(self.prompt_lens):
            raise UserError(f"{source}: sweep.prompt_lens has duplicates; list each length once")


class ReferenceRow(Record):
    prompt_len: StrictInt = Field(description="tokens")
    ttft_ms: FiniteNumber = Field(description="time to first token, milliseconds")
    kv_size: str = Field(description="KV cache of one request as published (decimal GB/MB)")
    transfer_ms: FiniteNumber = Field(description="KV transfer time, milliseconds")
    bandwidth_GB_s: FiniteNumber = Field(description="KV transfer bandwidth, decimal GB/s")
    utilization_pct: FiniteNumber = Field(description="share of the link's line rate, percent")


class Reference(Record):
    source: str
    rows: tuple[ReferenceRow, ...] = ()
    headline: dict[str, FiniteNumber] = Field(default_factory=dict)
    # For comparison scenarios: configuration name -> metric -> published value.
    configurations: dict[str, dict[str, FiniteNumber]] = Field(default_factory=dict)


class Thresholds(Record):
    min_bandwidth_GB_s: dict[StrictInt, NonNegative] = Field(
        default_factory=dict, description="prompt length (tokens) -> lowest KV bandwidth, decimal GB/s")
    max_ttft_ms: dict[StrictInt, NonNegative] = Field(
        default_factory=dict, description="prompt length (tokens) -> highest mean TTFT, milliseconds")
    max_transfer_share_pct: Percent | None = Field(
        default=None, description="highest share of the mean TTFT the KV transfer may take at any length, percent")
    min_peak_bandwidth_GB_s: NonNegative | None = Field(default=None, description="lowest peak bandwidth, decimal GB/s")
    min_peak_utilization_pct: Percent | None = Field(
        default=None, description="lowest peak share of the link's line rate, percent")
    min_completed_fraction: Fraction = Field(default=1.0, description="share of requests that must complete")
    max_request_errors: CountInt = Field(
        default=0, description="failed requests allowed per length (per load step in `pdrepro load`)")
    min_nic_kv_share_pct: Percent = Field(
        default=90.0,
        description="lowest share of the model's KV bytes the RDMA port counters must show at each length, percent "
                    "(an intact RDMA path shows all of it plus headers; a TCP fallback next to nothing)")
    min_rail_share: Fraction = Field(
        default=0.5,
        description="lowest share of the KV bytes one RDMA port that ib_devices.json names for the GPUs in use may "
                    "carry at each length, as a fraction of the mean per rail (an even split is 1.0 on every rail)")
    min_port_baseline_fraction: Fraction = Field(
        default=MIN_PORT_BASELINE_FRACTION,
        description="lowest share of its own line rate each RDMA port must reach in `pdrepro baseline`'s "
                    "ib_write_bw, measured alone and with all ports at once")
    max_transfer_p99_over_p50: Annotated[float, NumberBounds(ge=1)] = Field(
        default=3.0,
        description="`pdrepro load`: highest per-request KV transfer time p99 over its p50 at any load step (a tail "
                    "grown past this under load is queueing, not the fabric)")
    max_fault_recovery_s: Annotated[float, NumberBounds(ge=1, le=3600)] = Field(
        default=120.0,
        description="`pdrepro fault`: longest time from a fault's end (the kill, or the SIGCONT of a stopped server) "
                    "until the router answers a request again, seconds; a killed server's restart counts in it")
    max_kv_size_mismatch_pct: NonNegative = Field(
        default=5.0,
        description="largest gap between the scenario's KV size and the one the server logs before a warning, percent")
    derivation: dict[str, ThresholdRule] = Field(
        default_factory=dict,
        description="threshold name -> the rule behind its value (in words; with factor and of, the multiple of "
                    "a published figure), printed by `pdrepro scenarios show` with any rule the value no longer meets")
