"""A load step stopped while its bench client was writing: the partial result is set aside (never read as the
step's), the step recorded unfinished with the signal named, the steps before it kept; a rerun measures the
stopped step only. The servers are the sweep tests' fake cluster (tests/fakecluster.py, real HTTP on
127.0.0.1); the client is a stand-in that writes one record per step in the client's shape, or stops mid-write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakecluster import FakeCluster
from sweephelp import config, short_scenario

from pdrepro.core.errors import UserError
from pdrepro.core.signals import Stopped
from pdrepro.rundir import loadstate
from pdrepro.rundir.loadstate import LoadPlan, LoadStep
from pdrepro.sweep.loadrun import run_load

L, N = 512, 3
STEPS = (LoadStep(concurrency=1), LoadStep(concurrency=4))


class _Client:
    """Writes the record the bench client writes for the step its argv asks for; ``stop_at`` a concurrency:
    that step writes half a line and is stopped by SIGTERM, as a signal lands mid-write."""

    def __init__(self, stop_at: int | None = None):
        self.stop_at = stop_at
        self.runs: list[int] = []

    def image_digest(self) -> dict:
        return {"image": None, "in_place": True}

    def run(self, argv, *, mounts, timeout_s):
        cap = int(argv[argv.index("--max-concurrency") + 1])
        out = Path(argv[argv.index("--output-file") + 1])
        self.runs.append(cap)
        if cap == self.stop_at:
            out.write_text('{"completed": 2, "ttfts": [0.1, ')
            raise Stopped(15)
        record = {"dataset_name": "random", "random_input_len": L, "max_concurrency": cap, "completed": N,
                  "ttfts": [0.05] * N, "errors": [""] * N, "output_lens": [8] * N}
        out.write_text(json.dumps(record) + "\n")
        return 0


@pytest.fixture
def setup(tmp_path):
    scenario = short_scenario((L,))
    cluster = FakeCluster(tmp_path / "cluster", scenario)
    plan = LoadPlan(scenario_fingerprint=scenario.fingerprint, prompt_len=L, num_prompts=N, steps=STEPS)
    yield tmp_path, cluster, plan
    cluster.close()


def test_a_step_stopped_mid_write_is_set_aside_and_resumed_alone(setup):
    tmp_path, cluster, plan = setup
    stopping = _Client(stop_at=4)
    with pytest.raises(Stopped):
        run_load(config(tmp_path, cluster, stopping, prove_transport=False), plan)
    out = tmp_path / "run"
    state = loadstate.read(out)
    assert state is not None
    assert state.step("c1").status == "done" and state.step("c4").status == "unfinished"
    assert "SIGTERM" in (state.step("c4").reason or "")
    c4 = loadstate.step_run(out, STEPS[1])
    assert not c4.bench_file(L).exists()
    assert c4.set_aside_bench_file(L, "interrupted").read_text() == '{"completed": 2, "ttfts": [0.1, '
    kept = loadstate.step_run(out, STEPS[0]).bench_file(L).read_text()

    again = _Client()
    outcome = run_load(config(tmp_path, cluster, again, prove_transport=False), plan)
    assert again.runs == [4] and outcome.done == ["c4"] and outcome.skipped == ["c1"]
    assert loadstate.step_run(out, STEPS[0]).bench_file(L).read_text() == kept
    assert json.loads(c4.bench_file(L).read_text())["max_concurrency"] == 4
    final = loadstate.read(out)
    assert final is not None and all(final.step(s.name).status == "done" for s in STEPS)


def test_a_link_planted_where_a_step_writes_is_refused_and_nothing_lands_outside(setup):
    tmp_path, cluster, plan = setup
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "run" / "steps").mkdir(parents=True)
    (tmp_path / "run" / "steps" / "c1").symlink_to(elsewhere)
    client = _Client()
    with pytest.raises(UserError, match="not a folder of the run"):
        run_load(config(tmp_path, cluster, client, prove_transport=False), plan)
    assert client.runs == [] and list(elsewhere.iterdir()) == []
