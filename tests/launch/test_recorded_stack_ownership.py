"""The stack launcher's ownership proof against real SGLang on one H200 (tests/recorded/h200-stack-ownership-*,
see its SOURCE): the router renamed itself in place and was still proven and stopped, a foreign process planted
in the record was left alone, and nothing of the stack was left on the GPU."""

from __future__ import annotations

import json
from pathlib import Path

from pdrepro.launch.stack import record

RECORDED = Path(__file__).resolve().parents[1] / "recorded" / "h200-stack-ownership-sglang-0.5.15.post1"


def test_the_router_renamed_itself_and_the_record_holds_its_title():
    rec = record.StackRecord.model_validate(json.loads((RECORDED / "stack.json").read_text()))
    titles = {p.name: p.title for p in rec.processes}
    router = next(p for p in rec.processes if p.name == "router")
    assert router.title is not None and router.title[0] == "sglang::router" and router.title != router.argv
    assert titles["prefill-0"] is None and titles["decode-0"] is None  # SGLang's main processes keep their argv


def test_down_stopped_every_process_and_left_the_foreign_one_alone():
    console = (RECORDED / "console.txt").read_text()
    tampered = console.split("a foreign sleep put into the record", 1)[1].split("== [", 1)[0]
    assert "router (pid" in tampered and "stopped (SIGTERM)" in tampered and "down (tampered) exit 0" in tampered
    assert "is now another process, sleep" in tampered and "foreign sleep alive: good" in tampered
    assert "down exit 0" in console
    after = console.split("left after down", 1)[1].split("== [", 1)[0].strip().splitlines()
    assert after == ["pid, used_gpu_memory [MiB]"], f"left on the GPU after down: {after}"
