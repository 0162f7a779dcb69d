"""`pdrepro ab --repeats N`: each backend's arm run N times against the stand-in servers (real stack up and down,
the sweep stage standing in: tests/armsscript.py), interleaved A B A B, each repeat an arm of its own judged by
what it holds; then each backend's TTFT carries its interval and noise floor, and one backend is called better or
worse than the first only where the two intervals separate. Backends whose arms overlap are within the noise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from stackhelp import env, make_site, pdrepro, stop_left

from pdrepro.commands.ab import arm_order
from pdrepro.core.errors import UserError
from pdrepro.launch.stack import record
from pdrepro.rundir import armsstate
from pdrepro.rundir.absummary import AbSummary

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tests" / "armsscript.py"
ARMS = ["mooncake_tcp", "nixl", "mooncake_tcp-r2", "nixl-r2"]


def test_the_arms_run_interleaved_round_by_round():
    assert arm_order(("a", "b"), 1) == [("a", "a"), ("b", "b")]
    assert arm_order(("a", "b", "c"), 3) == [("a", "a"), ("b", "b"), ("c", "c"), ("a-r2", "a"), ("b-r2", "b"),
                                              ("c-r2", "c"), ("a-r3", "a"), ("b-r3", "b"), ("c-r3", "c")]
    for bad in (0, -1, 11):
        with pytest.raises(UserError, match=rf"--repeats {bad}: give 1 to 10"):
            arm_order(("a", "b"), bad)


@pytest.fixture
def site(tmp_path):
    made = make_site(tmp_path)
    yield made
    stop_left(made["run"] / arm for arm in ARMS)


# Each arm's TTFT against the stand-in's base figures: repeats differ a little (a drift), never byte for byte.
APART = "mooncake_tcp:1.0,mooncake_tcp-r2:1.02,nixl:2.0,nixl-r2:2.04"
CLOSE = "mooncake_tcp:1.0,mooncake_tcp-r2:1.06,nixl:1.03,nixl-r2:0.99"


@pytest.mark.parametrize(("fake", "said"), [(APART, "worse"), (CLOSE, "within the noise")], ids=["apart", "close"])
def test_repeats_run_interleaved_and_only_separate_intervals_are_called_worse(site, fake, said):
    dataset = site["tmp"] / "sharegpt.json"
    dataset.write_text("[]")
    options = [o for o in site["options"] if o != "--force-tcp"]
    done = subprocess.run([sys.executable, str(SCRIPT), "cli", "ab", *options, "--backends", "mooncake_tcp,nixl",
                           "--repeats", "2", "--dataset", str(dataset), "--stack-args", "--poll 0.1 --grace 5",
                           "--out", str(site["run"])], env=env(ARMS_FAKE_TTFT=fake, ARMS_FAKE_TRANSPORT="1"), cwd=REPO,
                          capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run = site["run"]
    state = armsstate.read(run)
    assert state is not None and [(a.name, a.backend, a.status) for a in state.arms] == [
        (name, name.removesuffix("-r2"), "done") for name in ARMS]
    # The runner ran them in that order: each arm's stack stopped before the next one's started.
    stops = [record.read(run / name).stopped_at for name in ARMS]
    assert all(s is not None for s in stops) and stops == sorted(stops)
    assert "x2 interleaved" in state.label
    summary = AbSummary.model_validate_json((run / "ab-summary.json").read_text())
    report = (run / "report.md").read_text()
    assert summary.passed and summary.rule and summary.rule in report
    assert [a.name for a in summary.arms] == ARMS
    for length in summary.lengths:
        first, other = length.backends
        assert (first.backend, first.arms) == ("mooncake_tcp", ["mooncake_tcp", "mooncake_tcp-r2"])
        assert (other.backend, other.arms) == ("nixl", ["nixl", "nixl-r2"])
        for b in (first, other):
            assert b.interval is not None and b.noise_floor is not None
            assert b.interval.low <= b.interval.point <= b.interval.high and b.interval.runs == 2
            assert b.interval.method.startswith("95 % bootstrap, 2000 resamples, seeded")
            means = [a.ttft_ms_mean for a in length.arms if a.arm in b.arms]
            assert b.noise_floor.spread == pytest.approx(max(means) - min(means), abs=0.01)
        assert first.standing == "not judged"  # the first backend is what the others are held to
        assert other.standing == said
        assert (other.interval.overlaps(first.interval)) == (said == "within the noise")
        assert f"{other.interval.low:.1f} to {other.interval.high:.1f}" in report
    assert "Noise floor: not measured" not in report


@pytest.mark.parametrize(("extra", "says"), [(["--repeats", "0"], "--repeats 0: give 1 to 10"),
                                             (["--repeats", "3", "--render", "slurm"], "--repeats with --render")])
def test_a_bad_number_of_repeats_is_one_line_and_starts_nothing(tmp_path, extra, says):
    done = pdrepro("ab", "--backends", "mooncake_tcp,nixl", "--out", str(tmp_path / "run"), *extra)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "run").exists()
