"""The commands a tune report prints as advice run as printed: the engine-alone measurement it suggests names the
tune's own scenario file, so, followed literally, it moves the bytes the tune's runs moved and the next collect
accepts it (gpu-check's default scenario is another model's)."""

from __future__ import annotations

import re
import shlex

from clihelp import pdrepro

from pdrepro.commands import build_parser
from pdrepro.scenario.model import load_scenario


def _hints(report: str) -> list[list[str]]:
    return [shlex.split(m) for m in re.findall(r"`(pdrepro gpu-check [^`]+)`", report)]


def test_the_engine_hint_names_the_tunes_scenario_and_parses(tmp_path):
    run = tmp_path / "tune"
    rendered = pdrepro("tune", "--render", "slurm", "--scenario", "h20-qwen3-235b-1p1d",
                       "--grid", "SGLANG_DISAGGREGATION_THREAD_POOL_SIZE=4,16", "--out", run)
    assert rendered.rc == 0, rendered.err
    report = tmp_path / "tune-report.md"  # judging writes nothing into the run: the report goes where it is told
    collected = pdrepro("tune", "--judge", run, "--report", report)
    assert collected.rc == 1  # no run has run yet: nothing is judged, and the report says what to measure
    hints = _hints(report.read_text())
    assert hints, "the tune report suggests no engine measurement"
    for words in hints:
        filled = [w.replace("RUN/", f"{run}/") for w in words[1:]]
        filled = ["0" if w == "..." else w for w in filled]
        args = build_parser().parse_args(filled)
        assert args.scenario.startswith(f"{run}/scenarios/"), words
        measured = load_scenario(args.scenario)
        tuned = load_scenario(str(run / "scenarios" / "baseline.yaml"))
        assert [measured.kv_bytes(n) for n in tuned.sweep.prompt_lens] == \
               [tuned.kv_bytes(n) for n in tuned.sweep.prompt_lens]
        # Without the --scenario the hint now carries, the same command measures another model's bytes.
        default = load_scenario(build_parser().parse_args(["gpu-check"]).scenario)
        assert default.kv_bytes_per_token != tuned.kv_bytes_per_token
