"""The real smoke stack: two containers from the smoke image, the real Mooncake
Transfer Engine over TCP between them, orchestrated by `pdrepro smoke`.

Needs Docker: under CI (CI=true) a missing engine or image fails these tests.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from smokeimage import REPO, smoke_image

pytestmark = pytest.mark.docker


def _smoke(tmp_path, *args, timeout=420):
    return subprocess.run(
        [sys.executable, "-m", "pdrepro", "smoke", "--results", str(tmp_path / "results"), "--timeout", "300", *args],
        cwd=REPO, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _leftovers(marker: str) -> str:
    proc = subprocess.run(["docker", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True)
    return "\n".join(n for n in proc.stdout.splitlines() if marker in n)


def test_smoke_moves_verified_kv_sized_buffers_over_tcp(tmp_path):
    # Both engines in one run (the NIXL arm is what .ci/run proves of NIXL): the same bytes, taking turns.
    image = smoke_image()
    proc = _smoke(tmp_path, "--image", image, "--prompt-lens", "128,4096,32768", "--repeats", "2", "--transport", "tcp",
                  "--backends", "mooncake,nixl")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    latest = tmp_path / "results" / "latest"
    assert latest.is_symlink()
    run = latest.resolve()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["source"] == "smoke" and summary["transport"] == "tcp"
    assert [r["prompt_len"] for r in summary["rows"]] == [128, 4096, 32768]
    assert [r["kv_bytes"] for r in summary["rows"]] == [524_288, 16_777_216, 134_217_728]
    for r in summary["rows"]:
        assert r["verified"] is True and r["socket_verified"] is True
        assert r["requests"] == 2 and len(r["transfer_ms_all"]) == 2
        assert r["bandwidth_GB_s"] > 0 and r["socket_bandwidth_GB_s"] > 0
        assert r["transfer_ms_median"] > 0
    smoke = summary["smoke"]
    # The transport was read from the engine's own lines, not assumed.
    assert any("TcpTransport: listen on port" in line for line in smoke["transport_evidence"])
    assert smoke["hcas_found"] == 0
    assert smoke["all_verified"] and smoke["mooncake_vs_socket_at_largest"] > 0
    # NIXL moved the same sizes, every byte checked, over TCP only: UCX's own lane lines say so on both sides.
    assert smoke["backends"] == ["mooncake", "nixl"]
    for r in summary["rows"]:
        assert r["nixl_verified"] is True and len(r["nixl_ms_all"]) == 2 and r["nixl_bandwidth_GB_s"] > 0
    nixl = smoke["nixl"]
    assert nixl["transport"] == "tcp" and set(nixl["transports"]) == {"tcp"}
    assert nixl["target_transport"] == "tcp" and set(nixl["target_transports"]) == {"tcp"}
    assert any("ucp_worker.c" in line and "tcp/" in line for line in nixl["evidence"])
    setup = nixl["setup"]
    assert setup["first_transfer_verified"] is True and setup["first_transfer_s"] > 0
    assert (run / "raw" / "ucx-decode.log").stat().st_size > 0
    assert 0 < smoke["memory_peak_bytes"] < 8e9
    assert summary["provenance"]["smoke_image"] == image
    report = (run / "report.md").read_text()
    assert "Mooncake against a plain socket copy" in report and "source: smoke" in report
    assert sorted(p.name for p in (run / "plots").glob("*.png")) == ["bandwidth.png", "transfers.png"]
    assert "NIXL ms (min/med/max)" in report and "NIXL connection set-up" in report
    # 3 sizes x 3 ways x (2 timed + 1 warm-up), each checked byte for byte.
    assert smoke["transfers_verified"] == smoke["transfers_checked"] == 27
    assert "verified 27 of 27 transfers byte for byte" in proc.stdout
    assert (run / "raw" / "initiator.json").is_file() and (run / "logs" / "decode.log").stat().st_size > 0
    assert "Mooncake / socket at 4096 and 32768 tokens (pooled)" in proc.stdout
    assert "peak memory of the stack" in proc.stdout
    # The stack is gone afterwards.
    assert _leftovers(f"pdsmoke-{run.name.replace('smoke-', '')}") == ""


def test_a_dying_prefill_container_is_reported_with_its_last_lines(tmp_path):
    image = smoke_image()
    text = (REPO / "compose" / "smoke.yaml").read_text()
    broken = text.replace('command: ["python3", "-m", "pdrepro.smoke.agent", "target"]',
                          'command: ["bash", "-c", "echo prefill-broke-here-7; exit 7"]')
    assert broken != text
    compose = tmp_path / "smoke.yaml"
    compose.write_text(broken)
    proc = _smoke(tmp_path, "--image", image, "--prompt-lens", "128", "--repeats", "1", "--transport", "tcp",
                  "--compose-file", str(compose), timeout=240)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "the prefill container died (exit 7)" in proc.stderr
    assert "prefill-broke-here-7" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert "tearing the stack down" in proc.stdout
    runs = [p for p in (tmp_path / "results").iterdir() if p.name.startswith("smoke-")]
    assert len(runs) == 1 and (runs[0] / "logs" / "prefill.log").is_file()
    assert _leftovers(f"pdsmoke-{runs[0].name.replace('smoke-', '')}") == ""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_smoke_tears_the_stack_down(tmp_path, sig):
    image = smoke_image()
    results = tmp_path / "results"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pdrepro", "smoke", "--image", image, "--results", str(results), "--transport", "tcp",
         "--repeats", "50"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        # Background jobs may inherit an ignored SIGINT; a terminal's Ctrl-C is not ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 180
        marker = None
        while marker is None or len(_leftovers(marker).split()) < 2:
            assert time.monotonic() < deadline, "the stack never came up"
            assert proc.poll() is None, proc.communicate()
            runs = list(results.glob("smoke-*")) if results.is_dir() else []
            if runs:
                marker = f"pdsmoke-{runs[0].name.replace('smoke-', '')}"
            time.sleep(0.5)
        time.sleep(3)  # into the transfers
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    # Exits as the signal would (130 for SIGINT, 143 for SIGTERM), naming it.
    assert proc.returncode == 128 + sig, out[-2000:] + err[-2000:]
    assert f"interrupted ({signal.Signals(sig).name}); results written so far are kept" in err
    assert "tearing the stack down" in out
    assert _leftovers(marker) == ""
    assert (runs[0] / "logs" / "decode.log").is_file()
