"""One prompt length of the sweep: scrape and read the NICs' counters, run the
bench client, check its result, keep it (or set it aside) and record the outcome."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..core import runfile
from ..core.roles import SERVER_ROLES
from ..rundir import RunDir
from ..rundir.contract import write_atomic
from . import metrics
from .benchclient import LengthTimeout, output_to
from .benchcmd import BenchTarget, bench_argv
from .config import SweepConfig, is_disaggregated
from .counters import CounterReader, record
from .progress import Heartbeat
from .state import SweepState, result_problem

log = logging.getLogger(__name__)


@dataclass
class LengthOutcome:
    reason: str | None  # None: the length is done
    elapsed_s: float
    client_s: float  # time inside the bench client, the rest is the sweep's overhead


def scrape(cfg: SweepConfig, run: RunDir, prompt_len: int, when: str) -> None:
    """Keeps the raw scrape; after a length also writes its difference to the one before."""
    if not cfg.scrape_metrics:
        return
    run.raw_metrics_dir.mkdir(parents=True, exist_ok=True)
    for role, url in (("prefill", cfg.prefill_url), ("decode", cfg.decode_url)):
        if not url:
            continue
        text, why = metrics.fetch(url.rstrip("/") + "/metrics", timeout_s=10)
        if text is None:
            log.info(f"  metrics: {role} /metrics {why}; start it with --enable-metrics")
            continue
        write_atomic(run.raw_metrics_file(role, when, prompt_len), text, run.root)
        before = run.raw_metrics_file(role, "before", prompt_len)
        if when == "after" and before.is_file():
            before_text = runfile.read_text(before, kind=runfile.METRICS)
            write_atomic(run.metrics_file(role, prompt_len), metrics.difference(before_text, text), run.root)


def collect_logs(cfg: SweepConfig, run: RunDir) -> None:
    if cfg.log_source is None:
        return
    t = cfg.scenario.topology
    servers = {role: t.servers(role) for role in SERVER_ROLES} if is_disaggregated(cfg.configuration) else None
    cfg.log_source.copy_to(run, servers)
    for path in getattr(cfg.log_source, "set_aside", []):
        log.info(f"  logs: error: {path} is the log of no server of the {t.label} topology (an earlier run's?); set "
                "aside, not copied into the run: remove it from the log folder")


def _host_path(path: str) -> str:
    """An existing host path made absolute, so that mounted at itself it means the same in the
    client's container (whose working folder is not ours); anything else (a hub id) as given."""
    if path and Path(path).exists():
        return str(Path(path).absolute())
    return path


def client_target(cfg: SweepConfig) -> BenchTarget:
    t = cfg.target
    return BenchTarget(cfg.router_url, _host_path(t.model_path), t.served_model_name, _host_path(t.dataset_path),
                       None if t.tokenizer is None else _host_path(t.tokenizer), t.python)


def run_length(cfg: SweepConfig, run: RunDir, mount_root: Path, length: int, counters: CounterReader,
               expected_s: float | None) -> LengthOutcome:
    """Runs the client for ``length`` into a partial file; raises KeyboardInterrupt as it came."""
    partial = run.partial_bench_file(length)
    partial.unlink(missing_ok=True)
    target = client_target(cfg)
    argv = bench_argv(cfg.scenario, length, target, partial)
    mounts = {mount_root: True}
    for path in (target.dataset_path, target.model_path, target.tokenizer):
        if path and Path(path).exists():
            mounts[Path(path)] = False
    scrape(cfg, run, length, "before")
    counters_before = counters.read()
    t0 = time.monotonic()
    reason = None
    ticker = Heartbeat(length, expected_s, cfg.heartbeat_s)
    try:
        reason = run_client(cfg, argv, mounts, run.logs_dir, f"prompt length {length}")
    except KeyboardInterrupt:
        ticker.stop()
        partial.unlink(missing_ok=True)
        raise
    finally:
        ticker.stop()
    elapsed = time.monotonic() - t0
    # A launcher that can tell the client's own run time (the container's
    # start to exit) lets container start-up count as the sweep's overhead.
    client_s = getattr(cfg.launcher, "last_client_s", None)
    client_s = min(client_s, elapsed) if client_s is not None else elapsed
    if reason is None:
        problem = result_problem(partial, cfg.scenario.sweep.num_prompts, length)
        if problem is not None:
            reason = f"result not valid: {problem}"
    if reason is None:
        # The NICs' own count of the length, for the analysis to set against the KV (witness.py).
        run.write_counters(record(counters_before, counters.read(), length))
        os.replace(partial, run.bench_file(length))
    elif partial.exists():
        os.replace(partial, run.set_aside_bench_file(length, "failed"))
    return LengthOutcome(reason, elapsed, client_s)


def run_client(cfg: SweepConfig, argv: list[str], mounts: dict, logs_dir: Path, header: str) -> str | None:
    """The bench client run once by the sweep's launcher: None when it ended 0, else why not (its status, or
    the length's time limit). A signal still stops it as KeyboardInterrupt, for the caller to record. Its own
    output goes to LOGS_DIR/bench-client.log under ``header``, not to the console."""
    with output_to(logs_dir, header) as path:
        log.info(f"  the bench client's output: {path}")
        try:
            rc = cfg.launcher.run(argv, mounts=mounts, timeout_s=cfg.length_timeout_s)
        except LengthTimeout as exc:
            return f"timed out: {exc} (its output: {path})"
    return None if rc == 0 else f"bench client exited with status {rc} (its output: {path})"


def record_outcome(state: SweepState, length: int, outcome: LengthOutcome) -> None:
    if outcome.reason is None:
        state.record(length, "done", seconds=round(outcome.elapsed_s, 3))
    else:
        state.record(length, "failed", reason=outcome.reason, seconds=round(outcome.elapsed_s, 3))
