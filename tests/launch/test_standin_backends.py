"""The stand-in stack speaks each transfer backend's real start-up and per-request lines, chosen as SGLang
chooses (the last --disaggregation-transfer-backend, MC_FORCE_TCP, UCX_TLS, UCX_LOG_LEVEL), so `pdrepro
stack up` + `pdrepro sweep` (bench client in place, the stand-in's) run end to end on 127.0.0.1: real
processes, real logs, the sweep's transport proof read from them."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from stackhelp import REPO, env, one_line_error, python_on_path, site, stack, sweep_standin, up

from pdrepro.backends import backend
from pdrepro.parsers import mooncake_log, nixl_log, reqstats
from pdrepro.parsers.serverstart import current_start

__all__ = ["site"]  # the fixture

UCX_TCP = {"UCX_TLS": "tcp,cuda_copy", "UCX_LOG_LEVEL": "info"}



def _up_nixl(site, env_: dict, ucx: dict[str, str]) -> subprocess.CompletedProcess:
    """NIXL as a scenario setting: the shipped one-box scenario with launch.transfer_backend nixl and its UCX
    environment in launch.env (the launcher hands a server no backend variable from the shell)."""
    scenario = Path(site["options"][1])
    text = scenario.read_text().replace("transfer_backend: mooncake", "transfer_backend: nixl")
    start, end = text.index("  env:\n"), text.index("\n", text.index("WITH_NVIDIA_PEERMEM")) + 1
    env_block = "  env:\n" + "".join(f"    {k}: {v!r}\n" for k, v in ucx.items()) if ucx else ""
    text = text[:start] + env_block + text[end:]  # Mooncake's variables go: NIXL reads none of them
    nixl = site["tmp"] / "onebox-nixl.yaml"
    nixl.write_text(text)
    site["options"][1] = str(nixl)
    options = [o for o in site["options"] if o != "--force-tcp"]
    return stack("up", "--target", "onebox", "--launcher", "host", *options, "--out", str(site["run"]),
                 "--poll", "0.1", "--grace", "5", env_=env_)


def _stack_env(site, **extra: str) -> dict:
    return env(PATH=python_on_path(site["tmp"]), STANDIN_CHILD="none", **extra)


def _requests_served(run: Path, role: str) -> list:
    return [s for s in reqstats.parse_log(run / "logs" / f"{role}.log").stats if not s.rid.startswith("HEALTH")]


def test_a_mooncake_stack_over_tcp_passes_the_sweep_and_its_transport_proof(site):
    env_ = _stack_env(site)
    started = up(site, env_=env_)
    assert started.returncode == 0, started.stderr
    try:
        swept = sweep_standin(site, env_=env_)  # the analysis too, as a user's sweep runs it
        assert swept.returncode == 0, swept.stdout[-3000:] + swept.stderr[-3000:]
        out = swept.stdout + swept.stderr
        assert "transport: tcp, allowed by the scenario (transport: any)" in out
        assert "'MC_FORCE_TCP is set' x1" in out
    finally:
        assert stack("down", str(site["run"]), "--grace", "1").returncode == 0
    run = site["run"]
    for role in ("prefill", "decode"):
        text = (run / "logs" / f"{role}.log").read_text()
        assert "disaggregation_transfer_backend='mooncake'" in text and "NIXL" not in text
        assert mooncake_log.scan(role, current_start(text), force_tcp_set=True).verdict == "tcp"
    prefill = _requests_served(run, "prefill")
    scenario_lengths = {int(p.name.split("-")[1].split(".")[0]) for p in (run / "bench").glob("result-*.jsonl")}
    assert scenario_lengths and {s.input_len for s in prefill} == scenario_lengths
    # The KV the stand-in reports is the shipped model's, 12288 bytes a token (binary MB, as SGLang's).
    assert all(abs(s.transfer_total_MiB - s.input_len * 12288 / 2**20) < 0.01 for s in prefill)
    decode = {s.rid for s in _requests_served(run, "decode")}
    assert {s.rid for s in prefill} == decode  # one rid per request, as the router hands it to both
    # Every request completed, KV sizes match the model, TTFT covers the logged transfer, TCP allowed on
    # one box: the run passes the bundle's own checks (what differs from the pins is a warning here).
    checked = subprocess.run([sys.executable, "-m", "pdrepro", "check", str(run), "--scenario", site["options"][1]],
                             capture_output=True, text=True, env=env(), timeout=120, cwd=REPO)
    assert checked.returncode == 0, checked.stdout[-3000:]
    assert "FAIL" not in checked.stdout and "kv_size_match" in checked.stdout


def test_a_nixl_stack_over_ucx_tcp_passes_the_sweep_and_its_transport_proof(site):
    env_ = _stack_env(site)
    started = _up_nixl(site, env_, UCX_TCP)
    assert started.returncode == 0, started.stderr
    try:
        swept = sweep_standin(site, env_=env_)  # its transport proof read through the scenario's backend, its analysis
        assert swept.returncode == 0, swept.stdout[-3000:] + swept.stderr[-3000:]
        out = swept.stdout + swept.stderr
        assert "transport: tcp, allowed by the scenario (transport: any)" in out
        assert "NIXL backend UCX; UCX_TLS=tcp,cuda_copy; UCX lanes self: tcp (eth0, lo)" in out
    finally:
        assert stack("down", str(site["run"]), "--grace", "1").returncode == 0
    nixl = backend("nixl")
    for role in ("prefill", "decode"):
        path = site["run"] / "logs" / f"{role}.log"
        with path.open() as f:
            seen = nixl.scan_latest_start(role, f)
        assert seen.verdict == "tcp", seen.describe()
        assert seen.ucx_tls == "tcp,cuda_copy" and seen.transports == {"tcp": {"lo", "eth0"}}
        assert set(seen.scopes) == {"self", "intra-node"}  # the peer's lanes, logged at the first request
        text = path.read_text()
        assert "NIXL KVManager initialized with backend: UCX" in text and "MC_FORCE_TCP" not in text
        assert all(line in text.splitlines() for line in seen.evidence)
    speeds = {s.transfer_speed_GiB_s for s in _requests_served(site["run"], "prefill")}
    assert speeds and all(v is not None and v > 0 for v in speeds)
    checked = subprocess.run([sys.executable, "-m", "pdrepro", "check", str(site["run"]), "--scenario",
                              site["options"][1]], capture_output=True, text=True, env=env(), timeout=120, cwd=REPO)
    # Every request completed, the logged KV matches the model, TTFT covers NIXL's logged transfer: each length
    # passes the checks the A/B's verdict per arm is made of, and the run passes `pdrepro check`.
    judged = [line.split() for line in checked.stdout.splitlines()
              if line.split()[:1] in (["completed"], ["kv_size_match"], ["ttft_covers_transfer"], ["requests_logged"])]
    assert len(judged) == 4 * 4 and all(row[-1] == "PASS" for row in judged), checked.stdout[-3000:]
    assert checked.returncode == 0 and "FAIL" not in checked.stdout, checked.stdout[-3000:]


@pytest.mark.parametrize("ucx_env, verdict", [
    ({"UCX_LOG_LEVEL": "info"}, "intra-host"),               # no UCX_TLS on one box: CUDA IPC, no network
    ({"UCX_TLS": "rc,cuda_copy", "UCX_LOG_LEVEL": "info"}, "rdma"),
    ({"UCX_TLS": "tcp,cuda_copy"}, "unknown"),              # UCX names no lane below info level
])
def test_the_nixl_stand_in_follows_ucx_tls_and_the_log_level(site, ucx_env, verdict):
    env_ = _stack_env(site)
    started = _up_nixl(site, env_, ucx_env)
    assert started.returncode == 0, started.stderr
    try:
        # One request through the router: UCX names a peer's lanes at its first transfer.
        request = urllib.request.Request(f"http://127.0.0.1:{site['router']}/generate", method="POST",
                                         data=json.dumps({"input_ids": [1] * 64}).encode())
        with urllib.request.urlopen(request, timeout=30) as resp:
            assert json.loads(resp.read())["meta_info"]["prompt_tokens"] == 64
    finally:
        stack("down", str(site["run"]), "--grace", "1")
    for role in ("prefill", "decode"):
        with (site["run"] / "logs" / f"{role}.log").open() as f:
            seen = nixl_log.scan_latest_start(role, f)
        assert seen.verdict == verdict, seen.describe()
    if verdict == "intra-host":
        assert "UCX_TLS=tcp,cuda_copy" in seen.describe()
    if verdict == "unknown":
        assert "UCX_LOG_LEVEL=info" in seen.describe()


def test_the_mooncake_stand_in_without_force_tcp_finds_no_hca_and_says_tcp(site):
    options = [o for o in site["options"] if o != "--force-tcp"]
    env_ = _stack_env(site)
    started = stack("up", "--target", "onebox", "--launcher", "host", *options, "--out", str(site["run"]),
                    "--poll", "0.1", "--grace", "5", env_=env_)
    assert started.returncode == 0, started.stderr
    stack("down", str(site["run"]), "--grace", "1")
    text = current_start((site["run"] / "logs" / "prefill.log").read_text())
    seen = mooncake_log.scan("prefill", text)
    assert seen.verdict == "tcp" and seen.hca_counts == [0]


def test_a_nixl_stack_without_ucx_tls_is_refused_by_the_sweep_naming_the_fix(site):
    # One box, UCX free to pick: before any peer, only the loopback endpoint's in-host lanes are logged, which
    # prove no network; the sweep stops at its proof (exit 2, one line) and says what to set.
    env_ = _stack_env(site)
    started = _up_nixl(site, env_, {"UCX_LOG_LEVEL": "info"})
    assert started.returncode == 0, started.stderr
    try:
        swept = sweep_standin(site, "--no-analyze", env_=env_)
    finally:
        stack("down", str(site["run"]), "--grace", "1")
    assert swept.returncode == 2, swept.stdout[-2000:] + swept.stderr[-2000:]
    line = one_line_error(swept)
    assert "KV transport is not RDMA or TCP" in line and "restrict UCX_TLS" in line and "tcp,cuda_copy" in line
    assert not list((site["run"] / "bench").glob("result-*.jsonl"))  # no bench ran
