"""The recorded NIXL and Mooncake arms on one H200 (tests/recorded/h200-onebox-nixl-and-mooncake-*, see its
SOURCE): every request completed in both, the table in its README is what the raw bench files give, and the
logs show which backend moved the KV and, for NIXL, which transports UCX chose (TCP only on that box)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

RECORDED = Path(__file__).resolve().parents[1] / "recorded" / "h200-onebox-nixl-and-mooncake-sglang-0.5.15.post1"
ARMS = ("nixl", "mooncake-tcp")
LENGTHS = (128, 1024, 4096, 16384)
# UCX names each lane's transport as <transport>/<device>; these are the RDMA ones (verbs, mlx5).
RDMA_TRANSPORTS = re.compile(r"\b(rc|rc_verbs|rc_mlx5|ud|ud_verbs|ud_mlx5|dc|dc_mlx5|ib)/")


def _last_record(arm: str, length: int) -> dict:
    lines = [l for l in (RECORDED / arm / "bench" / f"result-{length}.jsonl").read_text().splitlines() if l.strip()]
    return json.loads(lines[-1])


@pytest.mark.parametrize("arm", ARMS)
@pytest.mark.parametrize("length", LENGTHS)
def test_every_request_completed(arm, length):
    rec = _last_record(arm, length)
    assert rec["completed"] == 10 and rec["random_input_len"] == length


def test_the_readme_table_is_the_raw_files():
    text = (RECORDED / "README.md").read_text()
    rows = {int(m[0]): (float(m[1]), float(m[2])) for m in re.findall(r"^\| (\d+) \| ([\d.]+) \| ([\d.]+) \|$", text, re.M)}
    assert sorted(rows) == list(LENGTHS)
    for length, quoted in rows.items():
        measured = tuple(round(_last_record(arm, length)["mean_ttft_ms"], 1) for arm in ARMS)
        assert quoted == measured, f"{length} tokens: README says {quoted}, the bench files {measured}"


def test_each_arm_ran_the_backend_it_names():
    nixl = (RECORDED / "nixl" / "logs" / "prefill.log").read_text()
    mooncake = (RECORDED / "mooncake-tcp" / "logs" / "prefill.log").read_text()
    assert "disaggregation_transfer_backend='nixl'" in nixl and "NIXL KVManager initialized with backend: UCX" in nixl
    assert "disaggregation_transfer_backend='mooncake'" in mooncake and "NIXL" not in mooncake


@pytest.mark.parametrize("role", ("prefill", "decode"))
def test_ucx_chose_tcp_lanes_only(role):
    lines = [l for l in (RECORDED / "nixl" / "logs" / f"{role}.log").read_text().splitlines()
             if "ucp_worker.c" in l and "UCX  INFO" in l and "cfg#" in l]
    assert lines, "UCX printed no lane configuration at info level"
    assert all("tcp/" in l for l in lines) and not [l for l in lines if RDMA_TRANSPORTS.search(l)]
