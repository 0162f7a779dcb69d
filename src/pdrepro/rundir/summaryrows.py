"""The rows of summary.json, one per prompt length: LengthRow holds what every kind measures, Row adds what only
served requests show (a sweep's, a comparison's), SmokeRow the smoke's own figures. Closed to keys no model
declares. Split from summarymodel.py, which holds the summary around them and re-exports them: readers import
them from there."""

from __future__ import annotations

from pydantic import Field

from .railmodel import NicRail
from .summarybase import _Closed
from .summaryparts import NicNode, Stall


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
    # How many KV transfers shared the path at once, from the prefill lines' entry times and phases
    # (analysis/overlap.py).
    transfers_in_flight_median: float | None = Field(
        default=None, description="median over this length's measured requests of the KV transfers of this length "
                                  "whose windows overlapped each one's, itself counted (1: each moved alone); a "
                                  "window ends at entry_time plus the prefill's bootstrap, queue and forward "
                                  "durations and lasts the transfer time")
    transfers_in_flight_max: int | None = Field(default=None, description="the most of them overlapping one request")
    transfers_placed: int | None = Field(default=None, description="measured requests whose prefill line places "
                                                                   "their transfer window")
    alone_transfer_samples: int | None = Field(default=None, description="measured requests whose transfer "
                                                                         "overlapped no other")
    alone_transfer_ms_median: float | None = Field(default=None, description="their KV transfer time, median, "
                                                                             "milliseconds")
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
