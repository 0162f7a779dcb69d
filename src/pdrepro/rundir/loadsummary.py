"""RUN/load-summary.json as a typed model: a load sweep's steps, each with its failure accounting (the bench
client's failed requests, the servers' failed /generate answers, Mooncake session recoveries and retracted
requests from /metrics, the retries the prefill log lines count), its per-request KV transfer time p50/p99 from
the prefill logs and its client TTFT p50/p99.

The report (report/load.py) and the verdicts (verdicts/load.py) read this model, never keys of a dict; the
analysis (analysis/load.py) builds it. Units are in the names: milliseconds (_ms), requests per second.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import Field

from .memberrecord import MemberFinding
from .summarybase import _Closed

FILE = "load-summary.json"


class ServerFailures(_Closed):
    """One server's /metrics over one step (the difference of the scrapes before and after it)."""

    generate_responses: float | None = Field(default=None, description="/generate answers the server gave")
    generate_failed: float | None = Field(default=None, description="/generate answers with a status other than 2xx")
    requests: float | None = Field(default=None, description="sglang:num_requests_total over the step")
    session_recoveries: float | None = Field(
        default=None, description="sglang:failed_session_recoveries_total over the step (Mooncake peers that had failed)")
    retracted: float | None = Field(default=None, description="sglang:num_retracted_reqs after the step (a gauge)")


class LoadStepFigures(_Closed):
    name: str = Field(description="the step's folder in RUN/steps/")
    concurrency: int | None = Field(default=None, description="requests in flight at most; null: no cap")
    request_rate: float | None = Field(default=None, description="requests per second; null: all at once")
    status: Literal["done", "failed", "unfinished", "pending"] = Field(description="how far the step got")
    reason: str | None = Field(default=None, description="why a failed or unfinished step did not finish")
    requests: int = Field(description="requests the step sent (the plan's)")
    completed: int | None = Field(default=None, description="requests the bench client counts as successful")
    failed_requests: int | None = Field(default=None, description="requests the bench client counts as failed")
    first_error: str | None = Field(default=None, description="the first failed request's error, as the client wrote it")
    requests_per_s: float | None = Field(default=None, description="throughput: successful requests over the bench "
                                         "client's duration of the step (its record's completed / duration), req/s")
    output_tokens_per_s: float | None = Field(default=None, description="throughput: tokens the successful requests "
                                              "generated over the client's duration (total_output_tokens / duration), "
                                              "tokens/s")
    ttft_ms_p50: float | None = Field(default=None, description="client TTFT of the successful requests, median, ms")
    ttft_ms_p99: float | None = Field(default=None, description="client TTFT, 99th percentile, ms")
    logged_requests: int | None = Field(
        default=None, description="the step's requests in the prefill logs (health checks and warm-ups left out)")
    transfer_samples: int | None = Field(default=None, description="of those, the ones with a transfer time")
    transfer_ms_p50: float | None = Field(default=None, description="per-request KV transfer time, median, ms")
    transfer_ms_p99: float | None = Field(default=None, description="per-request KV transfer time, 99th percentile, ms")
    transfer_p99_over_p50: float | None = Field(default=None, description="transfer time p99 over p50")
    retries: int | None = Field(default=None, description="sum of the prefill lines' #retries over the step")
    retried_requests: int | None = Field(default=None, description="prefill lines of the step with #retries above 0")
    servers: dict[str, ServerFailures] = Field(
        default_factory=dict, description="role -> its /metrics over the step (empty without --metrics)")

    def over_servers(self, figure: Callable[[ServerFailures], float | None]) -> float | None:
        """One /metrics figure summed over the servers that recorded it (None: none did)."""
        found = [v for s in self.servers.values() if (v := figure(s)) is not None]
        return sum(found) if found else None

    def server_failed(self) -> float | None:
        """Failed /generate answers over the servers that were scraped (None: none was)."""
        return self.over_servers(lambda s: s.generate_failed)


class LoadIssue(_Closed):
    severity: Literal["error", "warning"]
    step: str | None = Field(default=None, description="the step it concerns; null: the whole run")
    message: str


class LoadThresholds(_Closed):
    max_request_errors: int = Field(description="failed requests allowed per step")
    max_transfer_p99_over_p50: float = Field(description="highest transfer time p99 over p50 per step")


class LoadSummary(_Closed):
    schema_version: Literal[1] = 1
    kind: Literal["load"] = "load"
    scenario: str = Field(description="the scenario's name")
    scenario_fingerprint: str
    prompt_len: int = Field(description="input tokens of every request")
    num_prompts: int = Field(description="requests per step")
    warmup_requests: int = Field(description="requests the client sent before each step's own (left out)")
    thresholds: LoadThresholds
    steps: list[LoadStepFigures]
    issues: list[LoadIssue] = Field(default_factory=list)
    # Steps whose own files are not the step the plan names (analysis.members), each a FAIL of its step; member
    # '.' is the load run itself (its recorded scenario against the plan's).
    members: list[MemberFinding] = Field(default_factory=list, description="what the steps' own files contradict")
    analysis_code: str | None = None

    def input_errors(self) -> list[LoadIssue]:
        return [i for i in self.issues if i.severity == "error"]
