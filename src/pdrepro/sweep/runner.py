"""The sweep itself: wait, prove the transport, run each length, record."""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import requests

from ..analysis import analyze_run
from ..errors import UserError
from ..rundir import RunDir
from ..scenario import Scenario, load_scenario
from . import health, metrics, provenance, rdma_proof
from .benchcmd import BenchTarget, bench_argv
from .counters import CounterReader, record
from .launcher import BenchLauncher, LengthTimeout
from .logsource import current_start, tail
from .state import SweepState, result_problem, write_json_atomic

FAILURE_POLICIES = ("continue", "stop")


def is_disaggregated(configuration: str | None) -> bool:
    """A comparison configuration named like 1P1D runs prefill and decode apart."""
    return configuration is None or bool(re.fullmatch(r"\d+P\d+D", configuration))


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
    log_source: object | None = None
    configuration: str | None = None
    length_timeout_s: float | None = None
    wait_timeout_s: float = 900.0
    on_failure: str = "continue"
    prove_transport: bool = True
    scrape_metrics: bool = False
    analyze: bool = True
    bench_image: dict | None = None
    heartbeat_s: float = 60.0
    say: Callable[[str], None] = print
    sysfs: Path = field(default=Path("/sys/class/infiniband"))


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
    summary: dict | None = None

    @property
    def overhead_s(self) -> float:
        return max(0.0, self.total_s - self.wait_s - self.bench_s)

    @property
    def overhead_pct(self) -> float:
        busy = self.total_s - self.wait_s
        return 100.0 * self.overhead_s / busy if busy > 0 else 0.0


def _cost(prompt_len: int, output_len: int) -> float:
    # Decode steps cost far more per token than prefill tokens; this weighting
    # only shapes the ETA, which is re-fitted after every measured length.
    return prompt_len + 16 * output_len


def _fmt_s(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


class _Heartbeat:
    """Says how far a length has got while the client is quiet (it prints
    little between requests at long prompts)."""

    def __init__(self, say, length: int, expected_s: float | None, every_s: float):
        self.say, self.length, self.expected_s = say, length, expected_s
        self.start = time.monotonic()
        self.done = threading.Event()
        self.thread = None
        if every_s > 0:
            self.thread = threading.Thread(target=self._loop, args=(every_s,), daemon=True)
            self.thread.start()

    def _loop(self, every_s: float) -> None:
        while not self.done.wait(every_s):
            elapsed = time.monotonic() - self.start
            if self.expected_s:
                left = self.expected_s - elapsed
                eta = f"~{_fmt_s(left)} left" if left > 0 else f"{_fmt_s(-left)} over the estimate"
                self.say(f"  prompt length {self.length}: {_fmt_s(elapsed)} elapsed, {eta}")
            else:
                self.say(f"  prompt length {self.length}: {_fmt_s(elapsed)} elapsed")

    def stop(self) -> None:
        self.done.set()
        if self.thread is not None:
            self.thread.join(timeout=1)


def _check_inputs(cfg: SweepConfig) -> None:
    sc = cfg.scenario
    if cfg.on_failure not in FAILURE_POLICIES:
        raise UserError(f"--on-failure {cfg.on_failure}: use one of {', '.join(FAILURE_POLICIES)}")
    if sc.kind == "comparison":
        names = sorted((sc.reference.configurations if sc.reference else {}) or {})
        if cfg.configuration not in names:
            raise UserError(f"scenario {sc.name} compares configurations; pass --configuration, one of: {', '.join(names)}")
    elif cfg.configuration is not None:
        raise UserError(f"--configuration applies to comparison scenarios only; {sc.name} is a {sc.kind} scenario, drop it")
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


def _write_scenario(cfg: SweepConfig, root: Path) -> None:
    path = root / "scenario.yaml"
    if path.is_file():
        previous = load_scenario(path)
        if previous.fingerprint != cfg.scenario.fingerprint:
            raise UserError(
                f"{root} holds a run of another scenario ({previous.name}, different settings); "
                "pass a new --out, or the same scenario and thresholds to resume")
        return
    root.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(".scenario.yaml.tmp")
    tmp.write_text(cfg.scenario.to_yaml())
    os.replace(tmp, path)


def _endpoints(cfg: SweepConfig) -> list[health.Endpoint]:
    eps = [health.Endpoint("router", cfg.router_url)]
    if cfg.prefill_url:
        eps.append(health.Endpoint("prefill", cfg.prefill_url))
    if cfg.decode_url:
        eps.append(health.Endpoint("decode", cfg.decode_url))
    eps += [health.Endpoint(f"worker{i}", url) for i, url in enumerate(cfg.worker_urls, start=1)]
    return eps


class TransportNotProven(UserError):
    def __init__(self, message: str, facts: dict):
        super().__init__(message)
        self.facts = facts


def _prove(cfg: SweepConfig, state: SweepState) -> dict | None:
    if not is_disaggregated(cfg.configuration):
        return None
    if not cfg.prove_transport:
        cfg.say("transport: NOT checked (--no-transport-proof); the run cannot pass the transport gate")
        state.event("transport-not-checked")
        return {"proven": False, "skipped": True}
    if cfg.log_source is None:
        raise UserError("cannot prove the KV transport without the servers' logs; pass --logs-from DIR or --logs-from docker")
    logs = {role: cfg.log_source.text(role) for role in ("prefill", "decode")}
    missing = [role for role, text in logs.items() if not text]
    if missing:
        raise UserError(
            f"no {' or '.join(missing)} server log found via {cfg.log_source.describe()}; "
            "point --logs-from at the folder the servers log into (or the containers' names) to prove the transport")
    # Only the servers' latest start counts: an older start may have had RDMA.
    proof = rdma_proof.prove({role: current_start(text) for role, text in logs.items()})
    state.event("transport", **proof.to_dict())
    if not proof.proven:
        raise TransportNotProven(f"KV transport is not RDMA: {proof.describe()}; {rdma_proof.FIX_HINT}", proof.to_dict())
    cfg.say(f"transport: {proof.describe()}")
    return proof.to_dict()


def _scrape(cfg: SweepConfig, run: RunDir, prompt_len: int, when: str) -> None:
    """Keeps the raw scrape; after a length also writes its difference to the one before."""
    if not cfg.scrape_metrics:
        return
    raw = run.metrics_dir / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for role, url in (("prefill", cfg.prefill_url), ("decode", cfg.decode_url)):
        if not url:
            continue
        try:
            resp = requests.get(url.rstrip("/") + "/metrics", timeout=10)
        except requests.RequestException as exc:
            cfg.say(f"  metrics: {role} /metrics unreachable ({type(exc).__name__}); start it with --enable-metrics")
            continue
        if not resp.ok:
            cfg.say(f"  metrics: {role} /metrics answered HTTP {resp.status_code}; start it with --enable-metrics")
            continue
        (raw / f"{role}-{when}-{prompt_len}.prom").write_text(resp.text)
        before = raw / f"{role}-before-{prompt_len}.prom"
        if when == "after" and before.is_file():
            (run.metrics_dir / f"{role}-{prompt_len}.prom").write_text(metrics.difference(before.read_text(), resp.text))


def _collect_logs(cfg: SweepConfig, run: RunDir) -> None:
    if cfg.log_source is not None:
        cfg.log_source.copy_to(run.logs_dir)


class _Provenance:
    """Host and image facts are collected once per sweep (they take a few
    subprocess calls); the per-length outcome is refreshed on every write."""

    def __init__(self, cfg: SweepConfig, root: Path):
        self.cfg, self.root, self.facts = cfg, root, None

    def write(self, transport_facts, state: SweepState) -> None:
        cfg = self.cfg
        if self.facts is None:
            self.facts = provenance.collect(
                scenario=cfg.scenario, endpoints={e.role: e.url for e in _endpoints(cfg)}, bench_image=cfg.bench_image,
                containers=cfg.log_source.containers() if cfg.log_source is not None else {},
                transport=transport_facts,
                log_source=cfg.log_source.describe() if cfg.log_source is not None else None,
                configuration=cfg.configuration, sysfs=cfg.sysfs,
            )
        facts = dict(self.facts, transport=transport_facts)
        facts["sweep"] = {"lengths": state.lengths, "failed": {str(k): v for k, v in state.failed().items()}}
        write_json_atomic(self.root / "provenance.json", facts)


def run_sweep(cfg: SweepConfig) -> SweepOutcome:
    _check_inputs(cfg)
    say = cfg.say
    started = time.monotonic()
    root = Path(cfg.out).resolve()
    run_root = root / cfg.configuration if cfg.configuration else root
    run = RunDir(run_root)
    _write_scenario(cfg, root)
    run.bench_dir.mkdir(parents=True, exist_ok=True)
    state = SweepState(run_root)
    sweep = cfg.scenario.sweep

    todo, skipped = [], []
    for length in sweep.prompt_lens:
        problem = result_problem(run.bench_file(length), sweep.num_prompts, length)
        if problem is None:
            skipped.append(length)
            continue
        if run.bench_file(length).exists():
            aside = run.bench_dir / f"result-{length}.jsonl.invalid"
            os.replace(run.bench_file(length), aside)
            say(f"length {length}: existing result is incomplete ({problem}); moved to {aside.name}, rerunning")
        todo.append(length)
    if skipped:
        say(f"resuming: {len(skipped)} length(s) already complete ({', '.join(map(str, skipped))}), skipped")

    wait_s = 0.0
    transport_facts = None
    if todo:
        say(f"waiting for the stack (up to {cfg.wait_timeout_s:.0f} s)")
        wait_s = health.wait_healthy(_endpoints(cfg), cfg.wait_timeout_s,
                                     log_tail=lambda role: tail(cfg.log_source, role), say=say)
        try:
            transport_facts = _prove(cfg, state)
        except TransportNotProven as exc:
            # What was found stays in the run for whoever debugs the fabric.
            _collect_logs(cfg, run)
            _Provenance(cfg, run_root).write(exc.facts, state)
            raise
    else:
        previous = next((e for e in reversed(state.events) if e.get("event") == "transport"), None)
        transport_facts = {k: v for k, v in previous.items() if k not in ("event", "at")} if previous else None
    # A comparison's configurations ran on different stacks: each keeps its own.
    prov = _Provenance(cfg, run_root)
    if todo or not (run_root / "provenance.json").is_file():
        prov.write(transport_facts, state)

    counters = CounterReader(cfg.sysfs, cfg.log_source)
    done: list[int] = []
    bench_s = 0.0
    measured_cost = 0.0
    total_cost = sum(_cost(L, sweep.output_len) for L in todo)
    for index, length in enumerate(todo, start=1):
        cost = _cost(length, sweep.output_len)
        if measured_cost > 0:
            rate = bench_s / measured_cost
            remaining = total_cost - sum(_cost(L, sweep.output_len) for L in todo[: index - 1])
            eta = f"expected ~{_fmt_s(cost * rate)}, overall ETA ~{_fmt_s(remaining * rate)}"
        else:
            eta = "no ETA until the first length is measured"
        say(f"[{index}/{len(todo)}] prompt length {length}: {sweep.num_prompts} prompts; {eta}")
        partial = run.bench_dir / f".result-{length}.jsonl.partial"
        partial.unlink(missing_ok=True)
        target = _with_base(cfg)
        argv = bench_argv(cfg.scenario, length, target, partial)
        mounts = {root: True}
        for path in (target.dataset_path, target.model_path, target.tokenizer):
            if path and Path(path).exists():
                mounts[Path(path)] = False
        _scrape(cfg, run, length, "before")
        counters_before = counters.read()
        t0 = time.monotonic()
        reason = None
        expected = cost * bench_s / measured_cost if measured_cost > 0 else None
        ticker = _Heartbeat(say, length, expected, cfg.heartbeat_s)
        try:
            rc = cfg.launcher.run(argv, mounts=mounts, timeout_s=cfg.length_timeout_s, say=say)
            if rc != 0:
                reason = f"bench client exited with status {rc}"
        except LengthTimeout as exc:
            reason = f"timed out: {exc}"
        except KeyboardInterrupt:
            ticker.stop()
            partial.unlink(missing_ok=True)
            state.event("interrupted", prompt_len=length, completed=done)
            _collect_logs(cfg, run)
            say(f"interrupted during length {length}; {len(done) + len(skipped)} complete length(s) kept, rerun to resume")
            raise
        finally:
            ticker.stop()
        elapsed = time.monotonic() - t0
        # A launcher that can tell the client's own run time (the container's
        # start to exit) lets container start-up count as the sweep's overhead.
        client_s = getattr(cfg.launcher, "last_client_s", None)
        bench_s += min(client_s, elapsed) if client_s is not None else elapsed
        measured_cost += cost
        if reason is None:
            problem = result_problem(partial, sweep.num_prompts, length)
            if problem is not None:
                reason = f"result not valid: {problem}"
        if reason is None:
            # The NICs' own count of the length, for the analysis to set against the KV (witness.py).
            run.counters_dir.mkdir(exist_ok=True)
            write_json_atomic(run.counters_file(length), record(counters_before, counters.read(), length))
            os.replace(partial, run.bench_file(length))
            done.append(length)
            state.record(length, "done", seconds=round(elapsed, 3))
            say(f"[{index}/{len(todo)}] prompt length {length}: done in {_fmt_s(elapsed)}")
        else:
            if partial.exists():
                os.replace(partial, run.bench_dir / f"result-{length}.jsonl.failed")
            state.record(length, "failed", reason=reason, seconds=round(elapsed, 3))
            say(f"[{index}/{len(todo)}] prompt length {length}: FAILED ({reason})")
        _collect_logs(cfg, run)
        _scrape(cfg, run, length, "after")
        if reason is not None and cfg.on_failure == "stop":
            say("stopping at the first failed length (--on-failure stop)")
            break

    if todo:
        _collect_logs(cfg, run)
        prov.write(transport_facts, state)
    failed = {L: r for L, r in state.failed().items() if L not in done and L not in skipped}
    outcome = SweepOutcome(run, done, skipped, failed, bench_s, time.monotonic() - started, wait_s)
    _report(outcome, say)
    if cfg.analyze:
        outcome.summary = _analyze(cfg, root, run)
        outcome.total_s = time.monotonic() - started
    say(f"sweep overhead: {outcome.overhead_s:.1f} s of {outcome.total_s - outcome.wait_s:.1f} s outside the "
        f"bench client ({outcome.overhead_pct:.2f} % of the sweep; target < {OVERHEAD_TARGET_PCT:g} %)")
    return outcome


def _host_path(path: str | None) -> str | None:
    """An existing host path made absolute, so that mounted at itself it means the same in the
    client's container (whose working folder is not ours); anything else (a hub id) as given."""
    if path and Path(path).exists():
        return str(Path(path).absolute())
    return path


def _with_base(cfg: SweepConfig) -> BenchTarget:
    t = cfg.target
    return BenchTarget(cfg.router_url, _host_path(t.model_path), t.served_model_name, _host_path(t.dataset_path),
                       _host_path(t.tokenizer), t.python)


def _report(outcome: SweepOutcome, say) -> None:
    say(f"sweep: {len(outcome.done)} length(s) run, {len(outcome.skipped)} already complete, {len(outcome.failed)} failed")
    for length, reason in sorted(outcome.failed.items()):
        say(f"  failed: prompt length {length}: {reason}")


def _analyze(cfg: SweepConfig, root: Path, run: RunDir) -> dict:
    # A comparison is analysed over all its configurations, which live under the run's root.
    summary = analyze_run(RunDir(root) if cfg.scenario.kind == "comparison" else run, cfg.scenario)
    cfg.say(f"analysis: report in {RunDir(root).report_file}")
    return summary
