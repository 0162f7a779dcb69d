"""Builds run directories in the exact formats SGLang writes, from figures.

Tests use it to make a run as the published benchmark would have left it
(bench client JSONL with --output-details, prefill/decode server logs with
request-stats lines among the usual log noise, one log per server of the
scenario's topology with the router's round robin over them, optional
/metrics scrape),
and to degrade such a run in the ways real runs go wrong. It is a test
helper, not part of the product.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from pdrepro.core.pins import load_pins
from pdrepro.core.units import MiB
from pdrepro.rundir import RunDir
from pdrepro.scenario.model import Scenario

# 2026-07-15 10:11:12 UTC, the day the published run's commits were taken.
T0 = 1784110272.0


@dataclass
class Row:
    prompt_len: int
    ttft_ms: float
    transfer_ms: float


def published_rows(scenario: Scenario) -> list[Row]:
    return [Row(r.prompt_len, r.ttft_ms, r.transfer_ms) for r in scenario.reference.rows]


def _spread(n: int, width: float) -> list[float]:
    """n relative offsets in [-width, width], symmetric: mean and median are exactly 0."""
    if n == 1:
        return [0.0]
    return [width * (2 * i / (n - 1) - 1) for i in range(n)]


def _stamp(t: float) -> str:
    import datetime as _dt

    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


@dataclass
class _Clock:
    t: float = T0
    scale: float = 1.0  # below 1: the log's time runs faster than the durations its lines state

    def tick(self, seconds: float) -> float:
        self.t += seconds * self.scale
        return self.t


@dataclass
class BuildOptions:
    transfer_factor: dict[int, float] = field(default_factory=dict)
    ttft_factor: dict[int, float] = field(default_factory=dict)
    drop_lengths: set[int] = field(default_factory=set)
    errors: dict[int, int] = field(default_factory=dict)
    old_spelling: bool = False
    # "space": "2.77 GB/s"; "compact": "2.77GB/s" with parenthesised bootstrap breakdown.
    style: str = "space"
    truncate_bench: set[int] = field(default_factory=set)
    empty_bench: set[int] = field(default_factory=set)
    appended_runs: set[int] = field(default_factory=set)
    # TP the logs' rank-0 share is computed with (a wrong one simulates a TP mismatch).
    log_tp: int | None = None
    cached_tokens: dict[int, int] = field(default_factory=dict)
    no_reqstats: bool = False
    output_details: bool = True
    metrics: bool = False
    # provenance.json: by default one as `pdrepro sweep` records it of the pinned software ("sweep"); None: none.
    provenance: dict | str | None = "sweep"
    write_scenario: bool = True
    tokens_off: int = 0
    # Tokens each successful request generated at length L (default: the requested output length).
    output_tokens: dict[int, int] = field(default_factory=dict)
    # RDMA port counters per length (RUN/counters/<L>.json), as the sweep records them:
    # the share of the KV the NICs counted (0.0: a TCP fallback), the roles read, the
    # counter width (32: legacy counters starting near their top, so they wrap), a
    # stand-in window in seconds, and extra hw_counters rises.
    counters: bool = True
    nic_share: dict[int, float] = field(default_factory=dict)
    counter_roles: tuple[str, ...] = ("prefill", "decode")
    counter_width: int = 64
    nic_window_s: dict[int, float] = field(default_factory=dict)
    # Seconds both readings of a length are moved by (-86400: read a day before its requests).
    nic_shift_s: dict[int, float] = field(default_factory=dict)
    nic_hw: dict[str, int] = field(default_factory=dict)
    # RUN/ib_devices.json as the sweep keeps it from the servers' /server_info: the GPUs in use spread over the four
    # NICs of the counters' trees (False: a run whose servers named no map).
    rail_map: bool = True
    # Server logs (role, index) the run lacks, as when the sweep copied only some servers' logs.
    drop_logs: set[tuple[str, int]] = field(default_factory=set)


def sweep_provenance(scenario: Scenario, proven: bool = True) -> dict:
    """A fixture of provenance.json as the sweep records it on a two-node run of the pinned software: the full
    pinned commits, each server's /server_info version (the image's build, <release>+g<commit>), the image's
    build args, and the transport proof (its servers' verdicts); the servers on other nodes than the sweep's."""
    pins = load_pins()
    built = f"{pins['SGLANG_NEAREST_RELEASE']}+g{pins['SGLANG_COMMIT']}"
    verdict = "rdma" if proven else "tcp"
    servers = {role: {"verdict": verdict, "summary": f"{role}: RDMA on mlx5_0 (GID index 3)" if proven
                      else f"{role}: tcp (HCAs found [0])"} for role in ("prefill", "decode")}
    return {"schema_version": 1, "scenario": {"name": scenario.name, "fingerprint": scenario.fingerprint},
            "pins": {"sglang_commit": pins["SGLANG_COMMIT"], "mooncake_commit": pins["MOONCAKE_COMMIT"]},
            "host": {"hostname": "node-b", "kernel": "6.8"}, "environment": {"MC_GID_INDEX": "3"},
            "endpoints": {"prefill": "http://10.0.0.1:30000", "decode": "http://10.0.0.2:30000",
                          "router": "http://10.0.0.2:8000"},
            "server_info": {"prefill": {"version": built}, "decode": {"version": built}},
            "versions": {"image": {"pdrepro_image_mooncake_commit": pins["MOONCAKE_COMMIT"],
                                   "pdrepro_image_sglang_commit": pins["SGLANG_COMMIT"]}},
            "transport": {"proven": proven, "servers": servers}}


def build_run(root: Path, scenario: Scenario, *, rows: list[Row] | None = None, **overrides) -> RunDir:
    """Write a run of ``scenario`` under ``root`` whose figures are ``rows`` (default: published)."""
    opts = BuildOptions(**overrides)
    rows = rows if rows is not None else published_rows(scenario)
    run = RunDir(Path(root))
    run.bench_dir.mkdir(parents=True, exist_ok=True)
    run.logs_dir.mkdir(parents=True, exist_ok=True)
    if opts.write_scenario:
        run.scenario_file.write_text(scenario.to_yaml())
    if opts.provenance is not None:
        prov = sweep_provenance(scenario) if opts.provenance == "sweep" else opts.provenance
        run.provenance_file.write_text(json.dumps(prov, indent=2))

    clock = _Clock()
    t = scenario.topology
    # Every server logs its own start; the further ones start alongside the first.
    prefills = [_startup_lines(clock if k == 0 else _Clock(), "prefill", scenario)
                for k in range(t.prefill.nodes * t.prefill.servers_per_node)]
    decodes = [_startup_lines(clock if k == 0 else _Clock(), "decode", scenario)
               for k in range(t.decode.nodes * t.decode.servers_per_node)]
    health_mib = round(4 * scenario.kv_bytes_per_token / scenario.parallel.prefill_tp / MiB, 2)
    for k, prefill in enumerate(prefills):
        prefill.append(_reqstats_prefill(clock, opts, f"HEALTH_CHECK_0c1d{k or ''}", 0, 4, 0.0004, health_mib, 0.45,
                                         t_first=0.031))
    sent = 0
    sweep = scenario.sweep
    metric = {"latency_ms": [], "total_mb": [], "speed_gb_s": []}
    room = 7_310_000_000_000_000_000
    for row in rows:
        if row.prompt_len in opts.drop_lengths:
            continue
        L = row.prompt_len
        t_start = clock.t
        n_err = opts.errors.get(L, 0)
        n_ok = sweep.num_prompts - n_err
        transfer_s = row.transfer_ms / 1000.0 * opts.transfer_factor.get(L, 1.0)
        ttft_s = row.ttft_ms / 1000.0 * opts.ttft_factor.get(L, 1.0)
        ttfts = [ttft_s * (1 + d) for d in _spread(n_ok, 0.04)]
        transfers = [transfer_s * (1 + d) for d in _spread(n_ok, 0.03)]
        tp = opts.log_tp or scenario.parallel.prefill_tp
        input_len = L + opts.tokens_off
        rank0_mib = round(input_len * scenario.kv_bytes_per_token / tp / MiB, 2)
        # Warm-up: connections and memory registration make the first transfer slow.
        warm = [(transfers[0] * 6, ttft_s * 3)] * sweep.warmup_requests
        served = warm + list(zip(transfers, ttfts))
        # A stand-in counter window shorter than the requests take: the log's clock runs faster for this length, so
        # every request line still falls inside the window the counters were read over (their durations stay).
        natural = sum(0.003 + f - x + sweep.output_len * 0.024 for x, f in served)
        clock.scale = min(1.0, 0.8 * opts.nic_window_s[L] / natural) if L in opts.nic_window_s else 1.0
        for i, (t_xfer, t_first) in enumerate(served):
            room += 1
            # The router's round robin: each role's servers in turn.
            prefill, decode = prefills[sent % len(prefills)], decodes[sent % len(decodes)]
            sent += 1
            prefill.append(_line(clock.tick(0.002), f"Prefill batch, #new-seq: 1, #new-token: {input_len}, #cached-token: 0, "
                                  f"token usage: 0.00, #running-req: 0, #queue-req: 0, #prealloc-req: 0, #inflight-req: 0, "
                                  f"input throughput (token/s): {input_len / max(t_first, 1e-3):.2f}, "))
            clock.tick(t_first - t_xfer)
            speed = round(rank0_mib / 1024 / t_xfer, 2)
            prefill.append(_reqstats_prefill(clock, opts, f"{L:05d}{i:04d}a3f9c2", room, input_len, t_xfer, rank0_mib, speed,
                                             cached=opts.cached_tokens.get(L, 0), t_first=t_first))
            metric["latency_ms"].append(t_xfer * 1000)
            metric["total_mb"].append(rank0_mib)
            metric["speed_gb_s"].append(speed)
            decode.append(_line(clock.tick(0.001), f"Decode batch, #running-req: 1, #token: {input_len + 64}, token usage: 0.01, "
                                 f"pre-allocated usage: 0.00, #prealloc-req: 0, #transfer-req: 0, #retracted-req: 0, "
                                 f"cuda graph: True, gen throughput (token/s): 41.37, #queue-req: 0, "))
            clock.tick(sweep.output_len * 0.024)
            decode.append(_reqstats_decode(clock, opts, f"{L:05d}{i:04d}a3f9c2", room, input_len, sweep.output_len, t_xfer))
            if i % 10 == 3:
                prefill.append(_line(clock.t, f'INFO:     10.0.0.2:4{i:04d} - "POST /generate HTTP/1.1" 200 OK', tp_tag=False))
        clock.scale = 1.0
        _write_bench(run, scenario, opts, L, input_len, ttfts, n_err, clock)
        if opts.counters:
            _write_counters(run, scenario, opts, L, n_ok + sweep.warmup_requests, t_start, clock.t)

    if opts.rail_map and opts.counters:
        from pdrepro.sweep.railmap import gpus_in_use

        run.root.joinpath("ib_devices.json").write_text(
            json.dumps({str(g): f"mlx5_{g % 4}" for g in range(gpus_in_use(scenario))}))
    for role, logs in (("prefill", prefills), ("decode", decodes)):
        for k, lines in enumerate(logs):
            if (role, k) in opts.drop_logs:
                continue
            if opts.no_reqstats:
                lines = [l for l in lines if "Time Stats(" not in l and "ReqTimeStats(" not in l]
            run.server_log(role, k).write_text("\n".join(lines) + "\n")
    if opts.metrics:
        run.metrics_dir.mkdir(exist_ok=True)
        (run.metrics_dir / "prefill.prom").write_text(_metrics_text(metric))
    return run


_TREES: dict[int, dict] = {}


def _nodes(width: int) -> dict:
    """Two nodes' sysfs trees, made once per process; their counters keep running across runs."""
    if width in _TREES:
        return _TREES[width]
    import atexit
    import shutil
    import tempfile

    from sysfs_builder import h20_node

    shm = Path("/dev/shm")  # the trees are rewritten for every length: keep them in memory where there is some
    tmp = Path(tempfile.mkdtemp(prefix="pdrepro-counters-", dir=shm if shm.is_dir() else None))
    atexit.register(shutil.rmtree, tmp, True)
    start = 2**32 - 1000 if width == 32 else 123_456_789_012
    nodes = _TREES[width] = {}
    for role in ("prefill", "decode"):
        fs = h20_node(tmp / role, extended_counters=width == 64)
        for s in range(4):
            for counter in ("port_xmit_data", "port_rcv_data"):
                fs.set_counter(f"mlx5_{s}", counter, start)
        nodes[role] = fs
    return nodes


def _write_counters(run: RunDir, scenario: Scenario, opts: BuildOptions, L: int, requests: int,
                    t0: float, t1: float) -> None:
    """Counters of both nodes' kernel-shaped sysfs trees read around the length, through
    the reader and record the sweep uses; the KV crosses the 4 NICs evenly, plus RoCE headers."""
    from pdrepro.fabric.counters import read_ports
    from pdrepro.sweep.counters import record

    t1 = t0 + opts.nic_window_s[L] if L in opts.nic_window_s else t1
    t0, t1 = t0 + opts.nic_shift_s.get(L, 0.0), t1 + opts.nic_shift_s.get(L, 0.0)
    moved = int(scenario.kv_bytes(L) * requests * 1.02 * opts.nic_share.get(L, 1.0))
    before, after = {}, {}
    for role, fs in _nodes(opts.counter_width).items():
        if role not in opts.counter_roles:
            continue
        ib = fs.root / "class" / "infiniband"
        # Nothing moves between one run's reading and the next: the last reading still holds.
        last = fs.__dict__.get("last_reading") or read_ports(ib)
        before[role] = {"source": f"{role} node (test tree)", "at": t0, "ports": last}
        for s in range(4):
            sent, received = (moved // 4, moved // 4000) if role == "prefill" else (moved // 4000, moved // 4)
            fs.traffic(f"mlx5_{s}", sent=sent, received=received, width=opts.counter_width, hw=opts.nic_hw)
        fs.last_reading = read_ports(ib)
        after[role] = {"source": f"{role} node (test tree)", "at": t1, "ports": fs.last_reading}
    run.counters_dir.mkdir(exist_ok=True)
    run.counters_file(L).write_text(json.dumps(record(before, after, L).to_json(), indent=2))


def _line(t: float, text: str, tp_tag: bool = True) -> str:
    return f"[{_stamp(t)} TP0] {text}" if tp_tag else text


def _startup_lines(clock: _Clock, role: str, scenario: Scenario) -> list[str]:
    tp = scenario.parallel.prefill_tp if role == "prefill" else scenario.parallel.decode_tp
    return [
        _line(clock.tick(1), f"server_args=ServerArgs(model_path='/models/{scenario.model.name}', tp_size={tp}, "
                             f"disaggregation_mode='{role}', disaggregation_transfer_backend='mooncake', "
                             f"enable_request_time_stats_logging=True)", tp_tag=False),
        _line(clock.tick(30), "Load weight end. type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, "
                              "avail mem=31.04 GB, mem usage=55.80 GB."),
        _line(clock.tick(5), "KV Cache is allocated. #tokens: 2403840, K size: 10.76 GB, V size: 10.76 GB"),
        _line(clock.tick(1), "Capture cuda graph end. Time elapsed: 24.30 s. mem usage=1.52 GB. avail mem=7.71 GB."),
        _line(clock.tick(1), "max_total_num_tokens=2403840, chunked_prefill_size=-1, max_prefill_tokens=32768, "
                             "max_running_requests=2048, context_len=262144"),
        "INFO:     Started server process [1]",
        "INFO:     Waiting for application startup.",
        "INFO:     Application startup complete.",
        "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
        _line(clock.tick(1), "The server is fired up and ready to roll!"),
    ]


def _reqstats_prefill(clock, opts, rid, room, input_len, t_xfer, rank0_mib, speed, cached=0, t_first=None):
    t_first = t_first or t_xfer * 3
    entry = clock.t - t_first
    head_len = f"input len={input_len}, output len=1" if opts.old_spelling else \
        f"input_len={input_len}, cached_input_len={cached}, output_len=1"
    name = "Req Time Stats" if opts.old_spelling else "ReqTimeStats"
    queue = 0.00041
    forward = t_first - queue - 0.0011
    if opts.style == "compact":
        body = (f"bootstrap_queue_duration(1.10ms) = bootstrap(0.86ms) + alloc_wait(0.24ms); "
                f"queue_duration={queue * 1000:.2f}ms, forward_duration={forward * 1000:.2f}ms, start={entry:.3f}, "
                f"transfer_speed={speed:.2f}GB/s, transfer_total={rank0_mib:.2f}MB, #retries=0")
    else:
        body = (f"bootstrap_duration=0.86ms, alloc_wait_duration=0.24ms, queue_duration={queue * 1000:.2f}ms, "
                f"forward_duration={forward * 1000:.2f}ms, entry_time={entry:.3f}, "
                f"transfer_speed={speed:.2f} GB/s, transfer_total={rank0_mib:.2f} MB, #retries=0")
    return _line(clock.t, f"{name}(rid={rid}, bootstrap_room={room}, {head_len}, type=prefill): {body}")


def _reqstats_decode(clock, opts, rid, room, input_len, output_len, t_xfer):
    name = "Req Time Stats" if opts.old_spelling else "ReqTimeStats"
    head = f"input len={input_len}, output len={output_len}" if opts.old_spelling else \
        f"input_len={input_len}, cached_input_len=0, output_len={output_len}"
    body = (f"bootstrap_duration=0.91ms, alloc_wait_duration=0.12ms, transfer_duration={t_xfer * 1000 + 95.3:.2f}ms, "
            f"queue_duration=0.20ms, forward_duration={output_len * 24.0:.2f}ms, entry_time={clock.t - output_len * 0.024:.3f}")
    return _line(clock.t, f"{name}(rid={rid}, bootstrap_room={room}, {head}, type=decode): {body}")


def _stats(values: list[float]) -> dict:
    s = sorted(values)
    n = len(s)
    mean = sum(s) / n
    median = (s[(n - 1) // 2] + s[n // 2]) / 2
    k = (n - 1) * 0.99
    lo = int(k)
    p99 = s[lo] + (s[min(lo + 1, n - 1)] - s[lo]) * (k - lo)
    std = math.sqrt(sum((v - mean) ** 2 for v in s) / n)
    return {"mean": mean, "median": median, "std": std, "p99": p99}


def _write_bench(run: RunDir, scenario: Scenario, opts: BuildOptions, L: int, input_len: int,
                 ttfts: list[float], n_err: int, clock: _Clock) -> None:
    sweep = scenario.sweep
    path = run.bench_file(L)
    if L in opts.empty_bench:
        path.write_text("")
        return
    out = sweep.output_len
    gen = opts.output_tokens.get(L, out)
    itl = 0.024
    e2e = [t + (out - 1) * itl for t in ttfts]
    ttft_ms = _stats([t * 1000 for t in ttfts])
    e2e_ms = _stats([t * 1000 for t in e2e])
    duration = sum(e2e)
    n_ok = len(ttfts)
    obj = {
        # The client's --tag, here the run's folder: two runs the builder makes are two measurements, and a real
        # client's record of one never equals another's byte for byte (its timings differ); the member checks
        # (analysis.members) name siblings whose bench files are equal as copies.
        "tag": run.root.name,
        "backend": "sglang", "dataset_name": "random", "request_rate": sweep.request_rate,
        "max_concurrency": sweep.max_concurrency, "sharegpt_output_len": None,
        "random_input_len": L, "random_output_len": out, "random_range_ratio": sweep.random_range_ratio,
        "duration": duration, "completed": n_ok,
        "total_input_tokens": input_len * n_ok, "total_output_tokens": gen * n_ok,
        "total_output_tokens_retokenized": gen * n_ok,
        "request_throughput": n_ok / duration, "input_throughput": input_len * n_ok / duration,
        "output_throughput": out * n_ok / duration, "total_throughput": (input_len + out) * n_ok / duration,
        "mean_e2e_latency_ms": e2e_ms["mean"], "median_e2e_latency_ms": e2e_ms["median"],
        "std_e2e_latency_ms": e2e_ms["std"], "p99_e2e_latency_ms": e2e_ms["p99"],
        "mean_ttft_ms": ttft_ms["mean"], "median_ttft_ms": ttft_ms["median"],
        "std_ttft_ms": ttft_ms["std"], "p99_ttft_ms": ttft_ms["p99"],
        "mean_tpot_ms": itl * 1000, "median_tpot_ms": itl * 1000, "std_tpot_ms": 0.0, "p99_tpot_ms": itl * 1000,
        "mean_itl_ms": itl * 1000, "median_itl_ms": itl * 1000, "std_itl_ms": 0.0,
        "p95_itl_ms": itl * 1000, "p99_itl_ms": itl * 1000,
        "concurrency": sum(e2e) / duration,
    }
    if opts.output_details:
        ok = [{"len": input_len, "out": gen, "ttft": round(t, 6), "itl": [itl] * max(gen - 1, 0),
               "text": "lorem " * min(gen, 3), "err": ""} for t in ttfts]
        bad = [{"len": input_len, "out": 0, "ttft": 0.0, "itl": [], "text": "",
                "err": "Traceback: aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected"}] * n_err
        reqs = ok[: n_ok // 2] + bad + ok[n_ok // 2:]
        obj.update({
            "input_lens": [r["len"] for r in reqs], "output_lens": [r["out"] for r in reqs],
            "ttfts": [r["ttft"] for r in reqs], "itls": [r["itl"] for r in reqs],
            "generated_texts": [r["text"] for r in reqs], "errors": [r["err"] for r in reqs],
        })
    text = json.dumps(obj) + "\n"
    if L in opts.appended_runs:
        older = dict(obj, mean_ttft_ms=obj["mean_ttft_ms"] * 5, completed=3,
                     ttfts=[t * 5 for t in obj.get("ttfts", [])])
        text = json.dumps(older) + "\n" + text
    if L in opts.truncate_bench:
        text = text[: len(text) // 2]
    path.write_text(text)


def _metrics_text(metric: dict[str, list[float]]) -> str:
    lines = []
    for name, values in metric.items():
        full = f"sglang:kv_transfer_{name}"
        lines += [f"# HELP {full} KV transfer {name}.", f"# TYPE {full} histogram"]
        for le in ("1.0", "10.0", "100.0", "+Inf"):
            count = sum(1 for v in values if le == "+Inf" or v <= float(le))
            lines.append(f'{full}_bucket{{engine_type="prefill",le="{le}",model_name="m",tp_rank="0"}} {float(count)}')
        lines.append(f'{full}_sum{{engine_type="prefill",model_name="m",tp_rank="0"}} {sum(values)}')
        lines.append(f'{full}_count{{engine_type="prefill",model_name="m",tp_rank="0"}} {float(len(values))}')
    lines.append('sglang:num_running_reqs{engine_type="prefill",model_name="m",tp_rank="0"} 0.0')
    return "\n".join(lines) + "\n"
