"""Hostile stack records beside a comparison's results (RUN/<configuration>/stack.json, which the report reads
for where each server ran): whatever they hold (not JSON, nested past reason, wrong shapes, names and GPUs that
are no text, a FIFO, a link to nothing), the analysis writes its summary and report, takes a placement only from
a record of the right shape, says a GPU was shared only when two servers of one configuration name the same
one, and writes nothing into the configuration folders."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from test_comparison import _run_as_published

from pdrepro.kinds.registry import analyze_run
from pdrepro.scenario.model import load_scenario

SCENARIO = load_scenario("a10-qwen25-7b-onebox-rate1")
GPU = st.one_of(st.sampled_from(["0", "1", "0,1", ""]), st.integers(0, 3), st.none(), st.lists(st.integers(), max_size=2))
PROCESS = st.one_of(
    st.fixed_dictionaries({"name": st.one_of(st.sampled_from(["prefill-0", "decode-0", "regular-0", "regular-1",
                                                              "router"]), st.integers()),
                           "env": st.one_of(st.fixed_dictionaries({"CUDA_VISIBLE_DEVICES": GPU}), st.just([]),
                                            st.none())}),
    st.integers(), st.text(max_size=5), st.none())
RECORD = st.one_of(
    st.fixed_dictionaries({"processes": st.lists(PROCESS, max_size=4)}).map(json.dumps),
    st.lists(PROCESS, max_size=2).map(json.dumps),
    st.text(max_size=40),
    st.integers(1, 3).map(lambda n: "[" * (3000 * n)),
    st.sampled_from(["fifo", "dangling"]),
)


def _place(folder: Path, record: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "stack.json"
    if record == "fifo":
        os.mkfifo(path)
    elif record == "dangling":
        path.symlink_to(folder / "nowhere")
    else:
        path.write_text(record)


def _listing(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): (p.lstat().st_size if not p.is_fifo() else -1)
            for p in sorted(root.rglob("*")) if p.name not in ("summary.json", "report.md")}


@settings(max_examples=examples(40))
@given(pd=RECORD, regular=RECORD)
def test_any_stack_record_gives_a_report_and_a_placement_only_from_its_shape(pd, regular):
    with tempfile.TemporaryDirectory() as tmp:
        run = _run_as_published(Path(tmp), SCENARIO)
        _place(run.root / "1P1D", pd)
        _place(run.root / "2-regular", regular)
        before = _listing(run.root)
        summary = analyze_run(run, SCENARIO)
        assert _listing(run.root) == before
        report = (run.root / "report.md").read_text()
        shared = False
        for config in summary["configurations"].values():
            gpus = config["measured"].get("gpus")
            if gpus is not None:
                assert gpus and all(isinstance(k, str) and isinstance(v, str) for k, v in gpus.items())
                servers = [v for k, v in gpus.items() if k != "router"]
                shared = shared or len(set(servers)) < len(servers)
        assert ("## On one shared GPU" in report) == shared
