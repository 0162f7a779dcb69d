"""One grammar for the commands that run several members (issue 34 item 6): `ab`, `tune` and `compare` take the
shared options under the same names with the same help and type, `load` those it shares; the older spellings
still work and say what to write next time; and every shared input is checked before any member starts (the
model folder, the dataset, the serving packages this Python imports): one line naming the input, exit 2, nothing
started, nothing written. The refusals are tested as a user meets them: `pdrepro` of this environment as a child
process, the stand-in serving packages on the path or off it."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pdrepro.commands import build_parser

REPO = Path(__file__).resolve().parents[2]
STANDIN = REPO / "tests" / "fixtures" / "standin"
SHARED = ("--out", "--model", "--dataset", "--gpus", "--transfer-backend", "--force-tcp", "--prompt-lens")
MEMBERS = ("ab", "tune", "compare")


def _actions(command: str) -> dict[str, argparse.Action]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {flag: action for action in sub.choices[command]._actions for flag in action.option_strings}


def test_the_commands_that_run_members_share_each_option_by_name_help_and_type():
    found = {command: _actions(command) for command in MEMBERS}
    for flag in SHARED:
        first = found[MEMBERS[0]][flag]
        for command in MEMBERS[1:]:
            other = found[command][flag]
            assert (other.help, other.type, other.metavar, other.choices, other.nargs) == (
                first.help, first.type, first.metavar, first.choices, first.nargs), (command, flag)
    # The servers of these commands (and of `stack up`) are processes of this host: no compose wording.
    for command in MEMBERS:
        assert "compose" not in (found[command]["--gpus"].help or "")
    assert "compose:" in (_actions("render")["--gpus"].help or "")  # render's default target is compose
    load = _actions("load")
    for flag in ("--out", "--model", "--dataset", "--prompt-lens"):
        assert flag in load, flag
    # The older spellings are the same options, not others.
    assert load["--model-path"] is load["--model"] and load["--dataset-path"] is load["--dataset"]
    assert load["--length"] is load["--prompt-lens"]
    assert found["tune"]["--collect"] is found["tune"]["--judge"]


def _pdrepro() -> list[str]:
    """This environment's `pdrepro`, as a user runs it."""
    script = Path(sys.executable).parent / "pdrepro"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "pdrepro"]


def _run(*args: str, standin: bool = True, cwd: Path = REPO, **more_env: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if standin:
        env["PYTHONPATH"] = os.pathsep.join([str(STANDIN), str(REPO / "src")])
    env.update(more_env)
    return subprocess.run([*_pdrepro(), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture
def inputs(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    dataset = tmp_path / "sharegpt.json"
    dataset.write_text("[]")
    return {"model": model, "dataset": dataset, "out": tmp_path / "run", "tmp": tmp_path}


def _member_argv(command: str, inputs: dict, **change: str) -> list[str]:
    given = {"model": str(inputs["model"]), "dataset": str(inputs["dataset"]), **change}
    scenario = ["--scenario", "a10-qwen25-7b-onebox-rate1"] if command == "compare" else []
    backends = ["--backends", "mooncake_tcp,nixl"] if command == "ab" else []
    grid = ["--grid", "SGLANG_DISAGGREGATION_THREAD_POOL_SIZE=4,16"] if command == "tune" else []
    return [command, *scenario, *backends, *grid, "--model", given["model"], "--dataset", given["dataset"], "--gpus", "0",
            "--out", str(inputs["out"])]


def _refused(proc: subprocess.CompletedProcess, *named: str) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert len(lines) == 1, proc.stderr
    for word in named:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("command", MEMBERS)
def test_a_wrong_model_folder_is_refused_before_any_member_starts(command, inputs):
    wrong = inputs["tmp"] / "no-such-model"
    line = _refused(_run(*_member_argv(command, inputs, model=str(wrong))), "--model", str(wrong))
    assert line.startswith(f"pdrepro {command}: error:")
    assert not inputs["out"].exists()  # nothing written: no run folder, no state, no arm
    # A folder that is not a model's (no config.json) is named as such.
    empty = inputs["tmp"] / "empty"
    empty.mkdir()
    assert "no config.json" in _refused(_run(*_member_argv(command, inputs, model=str(empty))), "--model")
    assert not inputs["out"].exists()


@pytest.mark.parametrize("command", MEMBERS)
def test_a_missing_dataset_is_refused_before_any_member_starts(command, inputs):
    wrong = inputs["tmp"] / "nowhere.json"
    _refused(_run(*_member_argv(command, inputs, dataset=str(wrong))), "--dataset", str(wrong), "no such file")
    assert not inputs["out"].exists()


@pytest.mark.parametrize("command", MEMBERS)
def test_missing_serving_packages_name_the_environment_before_any_member_starts(command, inputs):
    # This environment (.venv) has no SGLang: without the stand-ins on the path the members' servers could not
    # start, and the command says so at once, naming the environment that has them.
    line = _refused(_run(*_member_argv(command, inputs), standin=False), "make gpu-venv", "sglang")
    assert "cannot import" in line
    assert not inputs["out"].exists()


def test_a_missing_transfer_backend_package_is_named(inputs, tmp_path):
    # The stand-ins without NIXL's package: the A/B's nixl arm could not start; named before the first arm.
    site = tmp_path / "site"
    site.mkdir()
    for item in STANDIN.iterdir():
        if not item.name.startswith("nixl"):
            (site / item.name).symlink_to(item)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO / "src")])}
    proc = subprocess.run([*_pdrepro(), *_member_argv("ab", inputs)], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    _refused(proc, "nixl", "make gpu-venv")
    assert not inputs["out"].exists()


def _load_argv(inputs: dict, model: str, dataset: str) -> list[str]:
    # The stack's addresses answer nothing: a load that got past its inputs would wait on them, not refuse.
    dead = "http://127.0.0.1:9"
    return ["load", "--scenario", "onebox-qwen25-0.5b", "--router", dead, "--prefill", dead, "--decode", dead,
            "--model", model, "--dataset", dataset, "--bench-in-place", "--concurrency", "1", "--wait-timeout", "2",
            "--out", str(inputs["out"])]


@pytest.mark.parametrize("made", ["missing", "no config.json", "a file"])
def test_load_refuses_a_wrong_model_folder_before_any_step(made, inputs):
    # load checks its model as the member commands do (the same check): one line naming --model and the fix,
    # exit 2, before the image, a step or the run folder; under the older spelling too.
    model = inputs["tmp"] / "wrong-model"
    if made == "no config.json":
        model.mkdir()
    elif made == "a file":
        model.write_text("{}")
    line = _refused(_run(*_load_argv(inputs, str(model), str(inputs["dataset"]))), "--model", str(model),
                    "give the model's folder")
    assert line.startswith("pdrepro load: error: --model") and ("no config.json" in line) == (made == "no config.json")
    assert not inputs["out"].exists()
    # A run folder there (a load to resume) is left as it was: nothing written into it, nothing set aside.
    inputs["out"].mkdir()
    (inputs["out"] / "keep.txt").write_text("mine")
    proc = _run(*[w if w != "--model" else "--model-path" for w in _load_argv(inputs, str(model),
                                                                            str(inputs["dataset"]))])
    assert proc.returncode == 2 and "--model-path is now spelt --model" in proc.stderr
    assert "error: --model" in proc.stderr.strip().splitlines()[-1]
    assert sorted(p.name for p in inputs["out"].iterdir()) == ["keep.txt"]


def test_load_refuses_a_missing_dataset_before_any_step(inputs):
    wrong = inputs["tmp"] / "nowhere.json"
    _refused(_run(*_load_argv(inputs, str(inputs["model"]), str(wrong))), "--dataset", str(wrong), "no such file")
    assert not inputs["out"].exists()


def test_load_with_good_inputs_goes_on_to_the_stack(inputs):
    # The check can pass: a model folder and a dataset that hold, and load goes past them (to the dead stack,
    # which its wait reports as the stack's failure, not an input's), needing no serving package of this Python.
    proc = _run(*_load_argv(inputs, str(inputs["model"]), str(inputs["dataset"])), standin=False)
    assert "--model" not in proc.stderr and "--dataset" not in proc.stderr, proc.stderr
    assert "cannot import" not in proc.stderr and proc.returncode != 0


RENDERED = ("ab", "tune")  # the commands that render a job per member for a cluster (`compare` runs on one box)


def _render_argv(command: str, inputs: dict, *extra: str) -> list[str]:
    members = (["--backends", "mooncake,nixl"] if command == "ab"
               else ["--grid", "SGLANG_DISAGGREGATION_THREAD_POOL_SIZE=4,16"])
    return [command, "--render", "slurm", "--scenario", "h20-qwen3-235b-1p1d", *members, "--out", str(inputs["out"]),
            *extra]


@pytest.mark.parametrize("command", RENDERED)
@pytest.mark.parametrize("bad, named", [
    (("--model", "{tmp}/empty"), ("--model", "no config.json")),
    (("--model", "{tmp}/no-such-model"), ("--model",)),
    (("--dataset", "{tmp}/nowhere.json"), ("--dataset", "no such file")),
    (("--gpus", "0,x"), ("--gpus",)),
    (("--force-tcp",), ("--force-tcp",)),  # ab: one backend for every arm; tune: a cluster job is not TCP
    (("--stack-args=--prefill-ip",), ("--stack-args", "--prefill-ip")),
    (("--stack-args=--no-such-flag",), ("--stack-args", "--no-such-flag", "`pdrepro render` takes")),
])
def test_a_bad_input_of_a_rendered_member_is_refused_before_any_is_rendered(command, bad, named, inputs):
    # Every member's render is checked in memory before the first is written: one line, exit 2, no run folder
    # (no scenarios, no plan or arms state, no job), where a bad input used to surface at the first member's
    # render, after the command had written its scenarios and state into RUN.
    (inputs["tmp"] / "empty").mkdir()
    words = [w.format(tmp=inputs["tmp"]) for w in bad]
    _refused(_run(*_render_argv(command, inputs, *words)), *named)
    assert not inputs["out"].exists()


@pytest.mark.parametrize("command", RENDERED)
def test_a_run_folder_a_job_cannot_carry_is_refused_as_the_command_spells_it(command, inputs):
    # A space in --out would break the job's shell words: refused under the option the person gave (--out), not
    # as the render's --run-dir they never typed, and before anything is written.
    argv = _render_argv(command, inputs)
    out = inputs["tmp"] / "with space"
    argv[argv.index("--out") + 1] = str(out)
    line = _refused(_run(*argv))
    assert f"--out '{out}'" in line and "--run-dir" not in line, line
    assert not out.exists()


def test_ab_render_takes_a_cluster_target_only(inputs):
    # A job that writes its run into RUN/<arm> is a cluster scheduler's (render's --run-dir): compose and onebox
    # jobs cannot, so they are refused by name at once, not by the first arm's render.
    for target in ("compose", "onebox", "nonsense"):
        argv = _render_argv("ab", inputs)
        argv[argv.index("slurm")] = target
        assert f"--render {target}: give slurm or k8s" in _refused(_run(*argv))
        assert not inputs["out"].exists()


@pytest.mark.parametrize("command", RENDERED)
def test_rendered_members_check_what_this_machine_can_see_and_need_no_serving_packages(command, inputs):
    # The check passes where the inputs hold: the jobs are rendered, the model and dataset given are the ones they
    # name. It asks this Python for no serving package (the members' servers run in the GPU image on the nodes):
    # without the stand-ins, SGLang cannot be imported here, and the render goes on all the same. Its private
    # copies of the members' scenarios are gone once it ends.
    private = inputs["tmp"] / "private"
    private.mkdir()
    done = _run(*_render_argv(command, inputs, "--model", str(inputs["model"]), "--dataset", str(inputs["dataset"])),
                standin=False, TMPDIR=str(private))
    assert done.returncode == 0, done.stdout + done.stderr
    jobs = sorted(inputs["out"].glob("*/job/*.sbatch"))
    assert len(jobs) == (2 if command == "ab" else 5)
    assert all(str(inputs["model"]) in job.read_text() and str(inputs["dataset"]) in job.read_text() for job in jobs)
    assert list(private.iterdir()) == []
    # Without --model the jobs use the nodes' default model folder, which no check here can see: not refused.
    other = {**inputs, "out": inputs["tmp"] / "defaults"}
    assert _run(*_render_argv(command, other), standin=False).returncode == 0


def test_older_spellings_still_work_and_name_the_new_one(inputs):
    # tune: --stack-args='--force-tcp' is --force-tcp now; the note comes, and the command goes on to its own
    # verdict on its inputs (here: a wrong model, refused before anything starts).
    grid = "--grid=SGLANG_DISAGGREGATION_THREAD_POOL_SIZE=4,16"
    proc = _run("tune", grid, "--model", str(inputs["tmp"] / "nope"), "--dataset", str(inputs["dataset"]),
                "--stack-args=--force-tcp", "--out", str(inputs["out"]))
    note, error = proc.stderr.strip().splitlines()
    assert note == "pdrepro tune: note: --stack-args='--force-tcp' is now spelt --force-tcp (the old spelling still works)"
    assert error.startswith("pdrepro tune: error: --model") and proc.returncode == 2
    # ab: the same note, then the A/B's own refusal of one backend for every arm.
    proc = _run(*_member_argv("ab", inputs), "--stack-args=--force-tcp")
    note, error = proc.stderr.strip().splitlines()
    assert "note: --stack-args='--force-tcp' is now spelt --force-tcp" in note
    assert "--force-tcp: an A/B runs each arm on its own backend" in error and proc.returncode == 2
    # tune --collect is --judge; load --model-path is --model, --length is --prompt-lens.
    proc = _run("tune", "--collect", str(inputs["tmp"] / "no-run"))
    assert "pdrepro tune: note: --collect is now spelt --judge" in proc.stderr and proc.returncode == 2
    proc = _run("load", "--scenario", "onebox-qwen25-0.5b", "--router", "http://127.0.0.1:9", "--model-path",
                str(inputs["model"]), "--dataset-path", str(inputs["dataset"]), "--length", "99,100", "--concurrency", "1",
                "--out", str(inputs["out"]))
    lines = proc.stderr.strip().splitlines()
    assert [line for line in lines if "note:" in line] == [
        "pdrepro load: note: --model-path is now spelt --model (the old spelling still works)",
        "pdrepro load: note: --dataset-path is now spelt --dataset (the old spelling still works)",
        "pdrepro load: note: --length is now spelt --prompt-lens (the old spelling still works)"]
    assert "--prompt-lens" in lines[-1] and proc.returncode == 2


def test_the_transport_is_one_setting_whichever_route_gives_it(inputs):
    # tune: --stack-args' --transfer-backend against --force-tcp: two backends, refused with both places named.
    proc = _run("tune", "--grid=SGLANG_DISAGGREGATION_THREAD_POOL_SIZE=4,16", "--model", str(inputs["model"]),
                "--dataset", str(inputs["dataset"]), "--force-tcp",
                "--stack-args=--transfer-backend nixl", "--out", str(inputs["out"]))
    line = _refused(proc, "--stack-args' --transfer-backend nixl", "--force-tcp")
    assert "two backends" in line and not inputs["out"].exists()


def test_an_ab_narrowed_by_prompt_lens_records_its_lengths_and_is_judged_by_them(tmp_path):
    # The real `ab` (stack up and down on the stand-in servers, the sweep stage standing in: tests/armsscript.py,
    # which writes a bench file for each length the arm's own scenario names).
    from judgeout import judge_ab
    from stackhelp import env, make_site, pdrepro

    from pdrepro.rundir.absummary import AbSummary
    from pdrepro.scenario.model import load_scenario

    site = make_site(tmp_path)
    dataset = tmp_path / "sharegpt.json"
    dataset.write_text("[]")
    options = [o for o in site["options"] if o != "--force-tcp"]
    run = site["run"]
    done = subprocess.run([sys.executable, str(REPO / "tests" / "armsscript.py"), "cli", "ab", *options, "--backends",
                           "mooncake_tcp,nixl", "--dataset", str(dataset), "--stack-args", "--poll 0.1 --grace 5",
                           "--prompt-lens", "1024,128", "--out", str(run)],
                          env={**env(), "ARMS_FAKE_TTFT": "nixl:2"}, cwd=REPO, capture_output=True, text=True,
                          timeout=240)
    # (The stand-in sweep writes no transport lines: the arms' transport is unknown, which fails them: exit 1.)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    for arm in ("mooncake_tcp", "nixl"):
        assert load_scenario(run / "scenarios" / f"{arm}.yaml").sweep.prompt_lens == (128, 1024)
        assert sorted(p.name for p in (run / arm / "bench").glob("result-*.jsonl")) == [
            "result-1024.jsonl", "result-128.jsonl"]
    summary = AbSummary.model_validate_json((run / "ab-summary.json").read_text())
    assert [length.prompt_len for length in summary.lengths] == [128, 1024]
    assert judge_ab(pdrepro, run).returncode == done.returncode

    def present(arm: str) -> list[tuple[str, str]]:
        """(length, verdict) of `check`'s length_present lines for the arm: the lengths it is judged by."""
        lines = pdrepro("check", str(run / arm)).stdout.splitlines()
        return [(line.split()[1], line.split()[-1]) for line in lines if line.startswith("length_present")]

    assert present("nixl") == [("128", "PASS"), ("1024", "PASS")]  # judged by its two lengths, not the four
    # An arm missing one of the lengths its scenario recorded fails on it, in `check` and in the A/B's judge.
    (run / "nixl" / "bench" / "result-1024.jsonl").rename(tmp_path / "aside.jsonl")
    assert present("nixl") == [("128", "PASS"), ("1024", "FAIL")]
    assert judge_ab(pdrepro, run).returncode == 1
    # --prompt-lens through --sweep-args would narrow the sweep behind the arms' scenarios: refused, one line.
    refused = _run(*_member_argv("ab", {"model": site["model"], "dataset": dataset, "out": tmp_path / "other"}),
                   "--sweep-args=--prompt-lens 128")
    assert "give it to `pdrepro ab` itself" in _refused(refused)
