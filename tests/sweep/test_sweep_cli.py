"""`pdrepro sweep` on the command line: bad input is one line and exit 2."""

import subprocess
import sys

import pytest
from fakecluster import FakeBench, FakeCluster
from sweephelp import config, dataset, short_scenario

from pdrepro.sweep.logsource import DirLogSource, PerRoleLogSource, from_spec
from pdrepro.sweep.runner import run_sweep


def _sweep(*args):
    return subprocess.run([sys.executable, "-m", "pdrepro", "sweep", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def _base(tmp_path, *extra, ds=None):
    return ["--router", "http://127.0.0.1:9", "--out", tmp_path / "run", "--model-path", tmp_path,
            "--dataset-path", ds or dataset(tmp_path), "--image", "pdrepro-gpu:0.1.0", *extra]


def test_missing_dataset_is_named(tmp_path):
    proc = _sweep("--scenario", "h20-qwen3-235b-1p1d", "--prefill", "http://127.0.0.1:9", "--decode", "http://127.0.0.1:9",
                  *_base(tmp_path, ds=tmp_path / "nope.json"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("pdrepro sweep: error: --dataset-path") and "nope.json: no such file" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_pd_scenario_needs_worker_urls(tmp_path):
    proc = _sweep("--scenario", "h20-qwen3-235b-1p1d", *_base(tmp_path))
    assert proc.returncode == 2 and "--prefill URL and --decode URL" in proc.stderr


def test_comparison_needs_configuration(tmp_path):
    proc = _sweep("--scenario", "a10-qwen25-7b-rate1", "--configuration", "3-regular", "--worker", "http://127.0.0.1:9",
                  *_base(tmp_path))
    assert proc.returncode == 2 and "pass --configuration, one of: 1P1D, 2-regular" in proc.stderr


def test_unhealthy_stack_exits_2_and_keeps_scenario(tmp_path):
    proc = _sweep("--scenario", "h20-qwen3-235b-1p1d", "--prefill", "http://127.0.0.1:9", "--decode", "http://127.0.0.1:9",
                  "--wait-timeout", "1", *_base(tmp_path))
    assert proc.returncode == 2
    assert "router at http://127.0.0.1:9 not healthy after 1 s" in proc.stderr
    assert (tmp_path / "run" / "scenario.yaml").is_file()


def test_prefill_log_from_another_source(tmp_path):
    with FakeCluster(tmp_path, short_scenario((128,))) as c:
        prefill_dir = tmp_path / "prefill-node-logs"
        prefill_dir.mkdir()
        (c.log_dir / "prefill.log").rename(prefill_dir / "prefill.log")
        with pytest.raises(Exception, match="no prefill"):
            run_sweep(config(tmp_path, c, FakeBench(c), log_source=DirLogSource(c.log_dir)))
        # The bench appends prefill lines where the cluster writes them; point it back.
        (prefill_dir / "prefill.log").rename(c.log_dir / "prefill.log")
        source = PerRoleLogSource({"prefill": DirLogSource(c.log_dir), "decode": from_spec(str(c.log_dir), {})})
        out = run_sweep(config(tmp_path, c, FakeBench(c), log_source=source))
    assert out.done == [128]
    assert "installTransport, type=rdma" in out.run.prefill_log.read_text()
    assert from_spec("docker:ssh://root@10.0.0.1", {"prefill": "p"}).describe() == \
        {"kind": "docker", "engine": "ssh://root@10.0.0.1", "containers": {"prefill": "p"}}


def test_missing_model_folder_is_named_before_any_length_runs(tmp_path):
    args = _base(tmp_path)
    args[args.index("--model-path") + 1] = tmp_path / "models" / "Qwen3-235B-A22B-Instruct-2507"
    proc = _sweep("--scenario", "h20-qwen3-235b-1p1d", "--prefill", "http://127.0.0.1:9", "--decode", "http://127.0.0.1:9",
                  *args)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("pdrepro sweep: error: --model-path")
    assert "Qwen3-235B-A22B-Instruct-2507: no such folder" in proc.stderr
    assert not (tmp_path / "run" / "bench").exists()


@pytest.mark.parametrize("flag", ["--length-timeout", "--wait-timeout"])
def test_negative_or_zero_timeouts_are_refused(tmp_path, flag):
    for value in ("-5", "0"):
        proc = _sweep("--scenario", "h20-qwen3-235b-1p1d", "--prefill", "http://127.0.0.1:9", "--decode",
                      "http://127.0.0.1:9", flag, value, *_base(tmp_path))
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        errors = [l for l in proc.stderr.splitlines() if l.startswith("pdrepro sweep: error:")]
        assert len(errors) == 1 and flag in errors[0] and "above 0" in errors[0], proc.stderr
        assert not (tmp_path / "run").exists()


def test_out_naming_an_existing_file_is_one_line(tmp_path):
    (tmp_path / "run").write_text("notes\n")
    proc = _sweep("--scenario", "h20-qwen3-235b-1p1d", "--prefill", "http://127.0.0.1:9", "--decode", "http://127.0.0.1:9",
                  "--wait-timeout", "1", *_base(tmp_path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("pdrepro sweep: error: --out") and "is a file" in proc.stderr
    assert (tmp_path / "run").read_text() == "notes\n"


def test_smoke_refuses_a_negative_timeout_before_touching_docker():
    proc = subprocess.run([sys.executable, "-m", "pdrepro", "smoke", "--timeout", "-1"], capture_output=True, text=True,
                          timeout=60)
    errors = [l for l in proc.stderr.splitlines() if l.startswith("pdrepro smoke: error:")]
    assert proc.returncode == 2 and len(errors) == 1 and "--timeout" in errors[0] and "above 0" in errors[0]
