"""`pdrepro render --run-dir` (where an A/B arm's cluster job writes its run) takes hostile text: spaces, quotes,
`$`, backticks, newlines, `..`, relative paths, non-ASCII. `render --target slurm|k8s` exits 0 or 2 (one
line, no traceback), writes nothing outside --out (the run folder is the job's to make, not render's), and on
0 the sbatch script's `repro --out` word and the Kubernetes Job's run folder and mount read back to exactly
the path given: a `$` or a quote in it would otherwise be expanded by the job's shell, or a `..` climb out of
the arm's folder, and the sweep would write somewhere `pdrepro ab --judge` never looks."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from pathlib import Path

import yaml
from depth import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pdrepro.cli import main

SHIPPED = "h20-qwen3-235b-1p1d"
PIECE = st.sampled_from(["ab", "nixl", " ", "$HOME", "${X}", "'", '"', "`id`", "\\", "\n", "..", ".", "é", ",", ":",
                         "-", "_", "run+1", "a@b"])
RUN_DIR = st.one_of(st.lists(PIECE, min_size=1, max_size=4).map(lambda p: "/" + "/".join(p)),
                    st.lists(PIECE, max_size=4).map("".join), st.text(max_size=20))


def _render(tmp: Path, target: str, run_dir: str) -> tuple[int, list[str]]:
    ib = tmp / "ib.json"
    ib.write_text(json.dumps({str(i): f"mlx5_{i}" for i in range(8)}))
    err = io.StringIO()
    argv = ["render", "--target", target, "--scenario", SHIPPED, "--run-dir", run_dir, "--out", str(tmp / "out")]
    argv += ["--ib-devices", str(ib)] if target == "k8s" else []
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, err.getvalue().strip().splitlines()


def _slurm_out(tmp: Path) -> str:
    (script,) = (tmp / "out").glob("*.sbatch")
    block = re.search(r"^step repro - \\\n(.*?)\|\|", script.read_text(), re.S | re.M)
    assert block
    words = shlex.split(block.group(1).replace("\\\n", " "))
    (value,) = [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--out"]
    return value


def _k8s_out(tmp: Path) -> str:
    (job,) = [o for o in yaml.safe_load_all((tmp / "out" / "50-sweep-job.yaml").read_text()) if o and o["kind"] == "Job"]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assigned = re.search(r'^run="([^"$`\\]*)"$', container["command"][-1], re.M)
    assert assigned, "the run folder is not a literal the shell keeps as written"
    assert any(m["mountPath"] == assigned.group(1) and m["subPath"].startswith("runs/")
               for m in container["volumeMounts"])
    return assigned.group(1)


@settings(max_examples=examples(10), deadline=None)
@given(target=st.sampled_from(["slurm", "k8s"]), run_dir=RUN_DIR)
@example(target="slurm", run_dir="/shared/ab/$HOME")
@example(target="slurm", run_dir="/shared/ab/nixl")
@example(target="k8s", run_dir="/shared/ab/mooncake_tcp")
@example(target="k8s", run_dir='/shared/ab/x"; rm -rf /; "')
@example(target="slurm", run_dir="/shared/ab/../../etc")
def test_the_job_writes_exactly_where_it_was_told(tmp_path_factory, target, run_dir):
    tmp = tmp_path_factory.mktemp("r")
    rc, err = _render(tmp, target, run_dir)
    assert rc in (0, 2)
    assert sorted(p.name for p in tmp.iterdir()) == (["ib.json", "out"] if rc == 0 else ["ib.json"])
    if rc == 2:
        assert len(err) == 1 and "Traceback" not in err[0] and "--run-dir" in err[0], err
        return
    assert Path(run_dir).is_absolute() and ".." not in Path(run_dir).parts
    assert (_slurm_out(tmp) if target == "slurm" else _k8s_out(tmp)) == run_dir
