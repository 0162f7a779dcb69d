"""Run folders of every kind the bundle writes, for the tests that judge them all (the read matrix, the
adversarial verdict suite): a smoke's (built from agent output shaped as the in-container initiator writes
it, through the smoke's own summary and writers), a sweep's and a one-box sweep's (runbuilder), and a copy
of each real run under tests/recorded/. The built ones are fixtures; the recorded ones are real outputs."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

from runbuilder import Row, build_run, sweep_provenance

from pdrepro.rundir import Provenance, RunDir
from pdrepro.scenario.model import Scenario, load_scenario

REPO = Path(__file__).resolve().parents[1]
RECORDED = sorted(p for p in (REPO / "tests" / "recorded").iterdir() if (p / "bench").is_dir())

TCP_LINES = ["I1129 15:14:26.734120 11810 transfer_engine_impl.cpp:252] Topology discovery complete. Found 0 HCAs.",
             "I1129 15:14:26.734174 11810 tcp_transport.cpp:553] TcpTransport: listen on port 15523"]


def _measure(ms: list[float]) -> dict:
    return {"kind": "x", "ms": ms, "verified": True, "failed_checks": 0, "ms_median": sorted(ms)[len(ms) // 2],
            "ms_mean": sum(ms) / len(ms)}


def smoke_scenario() -> Scenario:
    from pdrepro.commands.smoke import as_run
    from pdrepro.scenario.smokeplan import make_plan

    plan = make_plan(load_scenario("smoke-tcp"), prompt_lens=[128, 4096, 32768], repeats=3)
    return as_run(load_scenario("smoke-tcp"), plan)


def build_smoke_run(root: Path) -> RunDir:
    """A smoke's run folder as `pdrepro smoke` leaves it: raw/initiator.json, logs/, provenance.json,
    scenario.yaml, and the summary, report and plots its own writers make."""
    from pdrepro.kinds import smoke as smoke_kind
    from pdrepro.scenario.smokeplan import make_plan
    from pdrepro.smoke.summary import build_summary

    plan = make_plan(load_scenario("smoke-tcp"), prompt_lens=[128, 4096, 32768], repeats=3)
    scenario = smoke_scenario()
    run = RunDir(root)
    run.raw_dir.mkdir(parents=True)
    run.logs_dir.mkdir()
    run.scenario_file.write_text(scenario.to_yaml())
    prov = {"run_id": root.name, "kind": "smoke", "host": "box", "requested_transport": "auto",
            "tcp_nodelay": False, "quickack": False}
    run.write_provenance(Provenance(prov))
    rows = [{"prompt_len": row.prompt_len, "kv_bytes": row.kv_bytes,
             "mooncake": _measure([mc * 0.98, mc, mc * 1.05]), "socket": _measure([sk, sk, sk])}
            for row, mc, sk in zip(plan.rows, [0.4, 8.0, 60.0], [0.3, 7.5, 55.0])]
    initiator = {"role": "initiator", "requested_transport": "auto", "error": None,
                 "evidence": {"transport": "tcp", "hcas_found": 0, "rdma_devices": [], "lines": TCP_LINES},
                 "plan": json.loads(plan.to_json()), "memlock_bytes": 8388608, "rows": rows,
                 "memory_peak": {"bytes": 300_000_000, "source": "/sys/fs/cgroup/memory.peak"},
                 "target_memory_peak": {"bytes": 280_000_000, "source": "/sys/fs/cgroup/memory.peak"}}
    run.agent_result("initiator").write_text(json.dumps(initiator, indent=2))
    for role in ("prefill", "decode"):
        run.role_log(role).write_text("\n".join(TCP_LINES) + "\n")
    smoke_kind.write_outputs(run, build_summary(scenario, initiator, prov))
    return run


def build_sweep_run(root: Path, scenario_name: str = "h20-qwen3-235b-1p1d", **kw) -> RunDir:
    """A sweep's run of the scenario: its published figures, or (a scenario that publishes none, as the one-box)
    a TTFT and transfer time growing with the prompt length."""
    scenario = load_scenario(scenario_name)
    if scenario.reference is None or not scenario.reference.rows:
        kw.setdefault("rows", [Row(L, 40.0 + L * 0.02, 1.0 + L * 0.001) for L in scenario.sweep.prompt_lens])
    return build_run(root, scenario, provenance=sweep_provenance(scenario), **kw)


def copy_recorded(source: Path, dest: Path) -> RunDir:
    shutil.copytree(source, dest)
    for p in dest.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return RunDir(dest)


def tree_hash(root: Path) -> dict[str, str]:
    """Every file under ``root`` (links as their target text) with the sha256 of its bytes."""
    out = {}
    for p in sorted(root.rglob("*")):
        key = str(p.relative_to(root))
        if p.is_symlink():
            out[key] = "link:" + str(p.readlink())
        elif p.is_file():
            out[key] = hashlib.sha256(p.read_bytes()).hexdigest()
        elif p.is_dir():
            out[key] = "dir"
    return out


def gates(run: Path, junit: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    """`pytest repro/ --run-dir RUN` as a user runs it, its JUnit file kept outside the run."""
    return subprocess.run([sys.executable, "-m", "pytest", "repro/", "--run-dir", str(run), "-p", "no:cacheprovider",
                           "-p", "no:xdist", "-p", "no:randomly", "-q", f"--junitxml={junit}", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def error_lines(text: str) -> list[str]:
    return [l for l in text.splitlines() if ": error: " in l]
