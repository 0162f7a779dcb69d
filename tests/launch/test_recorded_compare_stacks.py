"""Both stacks of the comparison on one H200 (tests/recorded/h200-compare-stacks-7b-*, see its SOURCE): the
host launcher started the disaggregated and the regular stack of the 7B-geometry one-box scenario on one GPU,
each server with its part of the memory, and stopped every process it started. The records are read through
the stack record's own model; the README's start times are the records'. No bench figure is claimed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pdrepro.launch.stack import record

RECORDED = Path(__file__).resolve().parents[1] / "recorded" / "h200-compare-stacks-7b-sglang-0.5.15.post1"
STACKS = {"1P1D": ("disaggregated", ["prefill-0", "decode-0", "router"]),
          "2-regular": ("regular", ["regular-0", "regular-1", "router"])}


@pytest.mark.parametrize("folder", STACKS)
def test_the_record_names_what_started_and_when_it_stopped(folder):
    rec = record.read(RECORDED / folder)
    kind, names = STACKS[folder]
    assert rec.stack == kind and [p.name for p in rec.processes] == names
    assert rec.stopped_at is not None
    for p in rec.processes:
        assert p.healthy_after_s is not None and p.healthy_after_s > 0
        if p.role != "router":
            # Servers sharing GPU 0, each with 0.35 of the memory free when it started.
            i = p.argv.index("--mem-fraction-static")
            assert p.argv[i + 1] == "0.35" and p.env.get("CUDA_VISIBLE_DEVICES") == "0"


def test_the_regular_router_balances_over_both_servers():
    rec = record.read(RECORDED / "2-regular")
    router = next(p for p in rec.processes if p.role == "router")
    i = router.argv.index("--worker-urls")
    servers = [f"http://127.0.0.1:{p.port}" for p in rec.processes if p.role != "router"]
    assert list(router.argv[i + 1:i + 3]) == servers


def test_the_readme_times_are_the_records():
    text = (RECORDED / "README.md").read_text()
    for folder in STACKS:
        for p in record.read(RECORDED / folder).processes:
            name = "the router" if p.role == "router" else p.name.split("-0")[0] if p.role in ("prefill", "decode") else p.name
            assert re.search(rf"{re.escape(name)}[^,.]* after {round(p.healthy_after_s)} s", text), (folder, name)


def test_stack_down_stopped_everything_it_started():
    console = (RECORDED / "console" / "compare.console.txt").read_text()
    for folder in STACKS:
        for p in record.read(RECORDED / folder).processes:
            assert f"{p.name} (pid {p.pid}) stopped" in console
    assert console.count("processes of this stack it does not name, found by its marker") == 2
