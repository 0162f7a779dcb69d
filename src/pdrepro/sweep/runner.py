"""The sweep itself, as the published loop: wait for the stack, prove the transport,
then for each prompt length run the bench client, collect logs and counters, record."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..core import signals
from ..core.errors import UserError
from ..core.roles import SERVER_ROLES
from ..core.signals import signal_name
from ..parsers.serverstart import current_start
from ..rundir import RunDir, server_log_name
from ..rundir.contract import write_atomic
from ..scenario.model import load_scenario
from ..scenario.seams import engine_of, run_backend
from . import health, rdma_proof
from .config import SweepConfig, is_disaggregated
from .counters import CounterReader
from .logsource import tail
from .progress import Progress, fmt_s
from .provenance import ProvenanceRecord
from .runlock import RunLock
from .state import SweepState, result_problem
from .step import collect_logs, record_outcome, run_length, scrape

log = logging.getLogger(__name__)

__all__ = ["SweepConfig", "SweepOutcome", "is_disaggregated", "run_sweep", "OVERHEAD_TARGET_PCT"]

# The sweep's own work (health waits excluded: log copies, scrapes, container
# start-up, bookkeeping) should stay under this share of its busy time, so that
# a sweep costs about what the published bench loop alone costs. Reported, not enforced.
OVERHEAD_TARGET_PCT = 2.0


@dataclass
class SweepOutcome:
    run: RunDir
    done: list[int]
    skipped: list[int]
    failed: dict[int, str]
    bench_s: float
    total_s: float
    wait_s: float
    summary: object | None = None

    @property
    def overhead_s(self) -> float:
        return max(0.0, self.total_s - self.wait_s - self.bench_s)

    @property
    def overhead_pct(self) -> float:
        busy = self.total_s - self.wait_s
        return 100.0 * self.overhead_s / busy if busy > 0 else 0.0


def _check_inputs(cfg: SweepConfig) -> None:
    cfg.scenario.check_configuration(cfg.configuration)
    if not Path(cfg.target.dataset_path).is_file():
        raise UserError(
            f"--dataset-path {cfg.target.dataset_path}: no such file; download the ShareGPT JSON once and give its path "
            "(the client would otherwise try to fetch it from a hub during the run)")
    for flag, value in (("--model-path", cfg.target.model_path), ("--tokenizer", cfg.target.tokenizer)):
        # A hub id (Org/Name) is fetched by the client; a path must be there to be mounted.
        if value and value.startswith(("/", "./", "../", "~")) and not Path(value).expanduser().exists():
            raise UserError(f"{flag} {value}: no such folder on this host; give the model folder the servers load "
                            "(the bench client reads its tokenizer there, mounted at the same path)")
    if cfg.length_timeout_s is not None and cfg.length_timeout_s <= 0:
        raise UserError(f"--length-timeout {cfg.length_timeout_s}: give a positive number of seconds")


def _write_scenario(cfg: SweepConfig, top: RunDir) -> None:
    path = top.scenario_file
    if path.is_file():
        previous = load_scenario(path)
        if previous.fingerprint != cfg.scenario.fingerprint:
            raise UserError(
                f"{top.root} holds a run of another scenario ({previous.name}, different settings); "
                "pass a new --out, or the same scenario and thresholds to resume")
        return
    top.root.mkdir(parents=True, exist_ok=True)
    write_atomic(path, cfg.scenario.to_yaml())


def _endpoints(cfg: SweepConfig) -> list[health.Endpoint]:
    engine = engine_of(cfg.scenario)
    return [health.Endpoint(role, url, engine.router_health_paths if role == "router" else engine.worker_health_paths)
            for role, url in cfg.endpoints().items()]


class TransportNotProven(UserError):
    def __init__(self, message: str, facts: dict):
        super().__init__(message)
        self.facts = facts


def _prove(cfg: SweepConfig, state: SweepState) -> dict | None:
    if not is_disaggregated(cfg.configuration):
        return None
    if not cfg.prove_transport:
        log.info("transport: NOT checked (--no-transport-proof); the run cannot pass the transport gate")
        state.event("transport-not-checked")
        return {"proven": False, "skipped": True}
    if cfg.log_source is None:
        raise UserError("cannot prove the KV transport without the servers' logs; pass --logs-from DIR or --logs-from docker")
    texts = {role: cfg.log_source.texts(role) for role in SERVER_ROLES}
    missing = [role for role, found in texts.items() if not found.get(0)]
    if missing:
        raise UserError(
            f"no {' or '.join(missing)} server log found via {cfg.log_source.describe()}; "
            "point --logs-from at the folder the servers log into (or the containers' names) to prove the transport")
    # Every server's log, each named as its file (prefill, prefill-1, ...): one TCP fallback among
    # several servers is as bad as the only one's. Only a server's latest start counts: an older start
    # may have had RDMA.
    logs = {server_log_name(role, i).removesuffix(".log"): current_start(text)
            for role, found in texts.items() for i, text in sorted(found.items())}
    backend = run_backend(cfg.out, cfg.scenario)
    proof = rdma_proof.prove(logs, backend)
    state.event("transport", **proof.to_dict())
    policy = cfg.scenario.transport
    if not proof.allowed(policy):
        expected = "RDMA" if policy == "rdma" else "RDMA or TCP (the scenario's transport: any)"
        raise TransportNotProven(f"KV transport is not {expected}: {proof.describe()}; {rdma_proof.fix_hint(backend)}",
                                 proof.to_dict())
    if not proof.proven:
        log.info(f"transport: {proof.used}, allowed by the scenario (transport: any): {proof.describe()}")
        return proof.to_dict()
    log.info(f"transport: {proof.describe()}")
    return proof.to_dict()


def _lengths_to_run(cfg: SweepConfig, run: RunDir) -> tuple[list[int], list[int]]:
    """(to run, already complete): a rerun resumes; an incomplete result is set aside."""
    sweep = cfg.scenario.sweep
    todo, skipped = [], []
    for length in sweep.prompt_lens:
        problem = result_problem(run.bench_file(length), sweep.num_prompts, length)
        if problem is None:
            skipped.append(length)
            continue
        if run.bench_file(length).exists():
            aside = run.set_aside_bench_file(length, "invalid")
            os.replace(run.bench_file(length), aside)
            log.info(f"length {length}: existing result is incomplete ({problem}); moved to {aside.name}, rerunning")
        todo.append(length)
    if skipped:
        log.info(f"resuming: {len(skipped)} length(s) already complete ({', '.join(map(str, skipped))}), skipped")
    return todo, skipped


def _ready(cfg: SweepConfig, run: RunDir, state: SweepState, todo: list[int],
           prov: ProvenanceRecord) -> tuple[float, dict | None]:
    """Waits for the stack and proves the transport; (seconds waited, transport facts)."""
    if not todo:
        previous = next((e for e in reversed(state.events) if e.event == "transport"), None)
        return 0.0, {k: v for k, v in previous.model_dump(exclude_unset=True).items() if k not in ("event", "at")} \
            if previous else None
    log.info(f"waiting for the stack (up to {cfg.wait_timeout_s:.0f} s)")
    wait_s = health.wait_healthy(_endpoints(cfg), cfg.wait_timeout_s,
                                 log_tail=lambda role: tail(cfg.log_source, role))
    signals.checkpoint()
    try:
        return wait_s, _prove(cfg, state)
    except TransportNotProven as exc:
        # What was found stays in the run for whoever debugs the fabric.
        collect_logs(cfg, run)
        prov.write(exc.facts, state)
        raise


def run_sweep(cfg: SweepConfig) -> SweepOutcome:
    _check_inputs(cfg)
    started = time.monotonic()
    top = RunDir(Path(cfg.out).resolve())
    run = top.configuration(cfg.configuration) if cfg.configuration else top
    _write_scenario(cfg, top)
    run.bench_dir.mkdir(parents=True, exist_ok=True)
    # Held until the sweep ends, however it ends: a second sweep here would run a second bench client.
    with RunLock(run.root):
        return _locked_sweep(cfg, top, run, started)


def _locked_sweep(cfg: SweepConfig, top: RunDir, run: RunDir, started: float) -> SweepOutcome:
    state = SweepState(run)
    sweep = cfg.scenario.sweep

    todo, skipped = _lengths_to_run(cfg, run)
    # A comparison's configurations ran on different stacks: each keeps its own.
    prov = ProvenanceRecord(cfg, run)
    if todo or not run.provenance_file.is_file():
        prov.prefetch()  # while the stack is waited for and the first length runs
    wait_s, transport_facts = _ready(cfg, run, state, todo, prov)
    if todo or not run.provenance_file.is_file():
        prov.write_soon(transport_facts, state)

    counters = CounterReader(cfg.sysfs, cfg.log_source)
    progress = Progress(todo, sweep.output_len)
    done: list[int] = []
    for index, length in enumerate(todo, start=1):
        log.info(f"[{index}/{len(todo)}] prompt length {length}: {sweep.num_prompts} prompts; {progress.eta(index, length)}")
        try:
            # A safe point (core.signals): a signal that came during the last length's bookkeeping ends the
            # sweep here, with this length marked unfinished.
            signals.checkpoint()
            outcome = run_length(cfg, run, top.root, length, counters, progress.expected_s(length))
        except KeyboardInterrupt as exc:
            why = f"stopped by {signal_name(exc)} while its bench client ran; rerun to measure it"
            state.record(length, "unfinished", reason=why)
            state.event("interrupted", prompt_len=length, completed=done, signal=signal_name(exc))
            collect_logs(cfg, run)
            prov.write(transport_facts, state)  # the facts collected beside this length stay in the run
            log.info(f"interrupted during length {length}; {len(done) + len(skipped)} complete length(s) kept, rerun to resume")
            raise
        except Exception:
            prov.settle()  # the record written beside this length lands before the error leaves
            raise
        progress.measured(length, outcome.client_s)
        record_outcome(state, length, outcome)
        if outcome.reason is None:
            done.append(length)
            log.info(f"[{index}/{len(todo)}] prompt length {length}: done in {fmt_s(outcome.elapsed_s)}")
        else:
            log.info(f"[{index}/{len(todo)}] prompt length {length}: FAILED ({outcome.reason})")
        collect_logs(cfg, run)
        scrape(cfg, run, length, "after")
        if outcome.reason is not None and cfg.on_failure == "stop":
            log.info("stopping at the first failed length (--on-failure stop)")
            break

    if todo:
        collect_logs(cfg, run)
        prov.write(transport_facts, state)
    failed = {L: r for L, r in state.failed().items() if L not in done and L not in skipped}
    result = SweepOutcome(run, done, skipped, failed, progress.bench_s, time.monotonic() - started, wait_s)
    _report(result)
    if cfg.analyze is not None:
        signals.checkpoint()
        result.summary = cfg.analyze(cfg.scenario.analysis_root(top, run), cfg.scenario)
        log.info(f"analysis: report in {top.report_file}")
        result.total_s = time.monotonic() - started
    if not result.done and not result.failed:
        # A resume that found every length complete ran no client: a share of nothing says nothing.
        log.info("sweep overhead: no length was measured in this call")
    else:
        log.info(f"sweep overhead: {result.overhead_s:.1f} s of {result.total_s - result.wait_s:.1f} s outside the "
                 f"bench client ({result.overhead_pct:.2f} % of the sweep; target < {OVERHEAD_TARGET_PCT:g} %)")
    return result


def _report(outcome: SweepOutcome) -> None:
    log.info(f"sweep: {len(outcome.done)} length(s) run, {len(outcome.skipped)} already complete, {len(outcome.failed)} failed")
    for length, reason in sorted(outcome.failed.items()):
        log.info(f"  failed: prompt length {length}: {reason}")
