"""What one sweep is asked to do: its settings, checked once by the runner."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..host.sysfs import DEFAULT_ROOT
from ..rundir import RunDir
from ..rundir.memberrecord import is_disaggregated  # noqa: F401  (its readers import it from here)
from ..scenario.model import Scenario
from .benchclient import BenchLauncher
from .benchcmd import BenchTarget
from .choices import DEFAULT_WAIT_S, FAILURE_POLICIES, FailurePolicy  # noqa: F401  (the CLI declares them without this module)
from .logsource import LogSource

# Where the node's RDMA port counters and NIC facts are read.
IB_CLASS = DEFAULT_ROOT / "class" / "infiniband"




@dataclass
class SweepConfig:
    scenario: Scenario
    out: Path
    router_url: str
    target: BenchTarget
    launcher: BenchLauncher
    prefill_url: str | None = None
    decode_url: str | None = None
    worker_urls: tuple[str, ...] = ()
    log_source: LogSource | None = None
    configuration: str | None = None
    length_timeout_s: float | None = None
    wait_timeout_s: float = DEFAULT_WAIT_S
    on_failure: FailurePolicy = "continue"
    prove_transport: bool = True
    scrape_metrics: bool = False
    # What the command layer runs over the finished run (the analysis), or None to skip it.
    # Passed in, so that the sweep, which produces raw results, never imports what reads them.
    analyze: Callable[[RunDir, Scenario], object] | None = None
    bench_image: dict | None = None
    heartbeat_s: float = 60.0
    sysfs: Path = IB_CLASS
    # The GPU-to-NIC map given with --ib-devices (checked by the command): kept in the run once the servers,
    # asked when they are healthy, do not contradict it (railmap.record_servers_map).
    ib_devices: Path | None = None

    def endpoints(self) -> dict[str, str]:
        """Role -> URL of every server the sweep waits for, router first."""
        eps = {"router": self.router_url}
        if self.prefill_url:
            eps["prefill"] = self.prefill_url
        if self.decode_url:
            eps["decode"] = self.decode_url
        eps.update({f"worker{i}": url for i, url in enumerate(self.worker_urls, start=1)})
        return eps
