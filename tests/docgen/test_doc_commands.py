"""The commands in the README and the guide work as written.

Blocks tagged ```` ```sh run ```` need no root, GPU, cluster or long build: they run here, as written, in a copy
of the repository (with this checkout's pdrepro on PATH) and must exit 0. Every other sh block is read line by
line and checked against what it names: pdrepro's own parser, the Makefile's targets and variables, the
scripts' arguments, and the files a render writes for sbatch."""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from guidetext import GUIDE_PAGES, ROOT, Block, blocks

from pdrepro.cli import main
from pdrepro.commands import build_parser
from pdrepro.scenario.model import shipped_names
from pdrepro.tune.slurm import ARRAY as TUNE_ARRAY

# Tools a checked block may name that the bundle does not own (their options are theirs to check).
FOREIGN = {"cd", "cp", "ls", "cat", "mkdir", "export", "source", "docker", "ssh", "ip", "ibv_devinfo",
           "nvidia-smi", "git", "tail", "less", "rm", "curl", "grep", "pytest", ".venv/bin/pytest", "huggingface-cli",
           "sha256sum", "df"}
SCRIPT_PATHS = ("scripts/", ".ci/")
RUN_BUDGET_S = 60
BLOCK_BUDGET_S = 20  # a block runs a few pdrepro commands on shipped files: seconds, not minutes


def _page_blocks(kind: str) -> list[tuple[Path, Block]]:
    found = [(page, b) for page in GUIDE_PAGES for b in blocks(page.read_text()) if b.language == "sh"]
    return [(p, b) for p, b in found if b.runs == (kind == "run")]


def _commands(block: Block) -> list[list[str]]:
    """Each command of a block as words: continuation lines joined, comments dropped, `a && b` split."""
    text = block.text.replace("\\\n", " ")
    out: list[list[str]] = []
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        command: list[str] = []
        for word in [*words, "&&"]:
            if word in ("&&", "||", ";", "|"):
                if command:
                    out.append(command)
                command = []
            else:
                command.append(word)
    return out


def _make_database() -> str:
    return subprocess.run(["make", "-pn", "-f", "Makefile", "help"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60).stdout


def _make_targets(database: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^([a-zA-Z0-9][\w.-]*):(?!=)", database, re.M)}


def _make_variables() -> set[str]:
    """Every variable the Makefile and its includes read or set (a user's VAR=value must be one of them)."""
    text = "\n".join(p.read_text() for p in [ROOT / "Makefile", *ROOT.glob("*/*.mk")])
    return set(re.findall(r"\$\((\w+)\)", text)) | set(re.findall(r"^(\w+)\s*[?:]?=", text, re.M))


def _script_actions(path: Path) -> set[str]:
    """The first arguments a script's top-level `case` accepts (`up)`, `-h | --help)`)."""
    text = path.read_text()
    if "case $action in" not in text and 'case "$1" in' not in text:
        return set()
    body = text.split("case $action in", 1)[-1] if "case $action in" in text else text.split('case "$1" in', 1)[-1]
    body = body.split("esac", 1)[0]
    return {w.strip() for label in re.findall(r"^\s*([\w-]+(?:\s*\|\s*[\w-]+)*)\)\s*$", body, re.M)
            for w in label.split("|")}


@functools.cache
def _k8s_files() -> frozenset[str]:
    """The file names `pdrepro render --target k8s` writes, from a real render into a scratch folder."""
    with tempfile.TemporaryDirectory() as out:
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["render", "--target", "k8s", "--scenario", "h20-qwen3-235b-2p2d", "--out", out]) == 0
        return frozenset(p.name for p in Path(out).iterdir())


def _check_pdrepro(words: list[str]) -> str | None:
    if any(w in ("...", "…") or w.startswith("[") for w in words):
        return "a placeholder ('...' or '[...]') is not a command as written"
    try:
        build_parser().parse_args(words)
    except SystemExit:
        return "pdrepro's parser refuses it"
    return None


def _check(words: list[str], database: str) -> str | None:
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        words = words[1:]  # VAR=value before a command: its environment
    if words and words[0] == "sudo":
        words = words[1:]
    if not words:
        return "no command"
    tool = words[0]
    if tool.endswith("/pdrepro") or tool == "pdrepro":
        return _check_pdrepro(words[1:])
    if tool == "make":
        targets = [w for w in words[1:] if "=" not in w and not w.startswith("-")]
        unknown = [t for t in targets if t not in _make_targets(database)]
        variables = [w.split("=", 1)[0] for w in words[1:] if "=" in w]
        known = _make_variables()
        return (f"no make target {unknown}" if unknown else
                f"no make variable {[v for v in variables if v not in known]}" if any(v not in known for v in variables)
                else None)
    if tool == "bash" and len(words) > 1:
        words = words[1:]
        tool = words[0]
    if tool.startswith(SCRIPT_PATHS):
        script = ROOT / tool
        if not script.is_file():
            return f"{tool}: no such script"
        actions = _script_actions(script)
        if actions and (len(words) < 2 or words[1] not in actions):
            return f"{tool} takes one of {sorted(actions)} first"
        if not actions and len(words) > 1:
            return f"{tool} takes no arguments"
        return None
    if tool == "sbatch":
        path = next((w for w in words[1:] if w.endswith(".sbatch")), "")
        if Path(path).name == TUNE_ARRAY:  # `pdrepro tune --render slurm` writes it beside the runs' own jobs
            return None
        return None if Path(path).stem in shipped_names() else f"{path}: `render --target slurm` writes no such file"
    if tool == "kubectl":
        # `apply -f FILE` names a rendered file; `logs -f` means follow.
        wanted = [words[i + 1] for i, w in enumerate(words[:-1]) if w == "-f" and "apply" in words]
        unknown = [w for w in wanted if Path(w).name not in _k8s_files()]
        return f"{unknown}: `render --target k8s` writes no such file" if unknown else None
    if tool in FOREIGN:
        return None
    return f"{tool}: not a command the docs test knows; tag the block `run` or teach the test to check it"


CHECKED = _page_blocks("check")


@pytest.fixture(scope="module")
def database() -> str:
    return _make_database()


@pytest.mark.parametrize(("page", "block"), CHECKED, ids=[f"{p.name}:{b.line}" for p, b in CHECKED])
def test_checked_commands_name_what_exists(page, block, database):
    problems = [f"`{' '.join(c)}`: {why}" for c in _commands(block) if (why := _check(c, database))]
    assert not problems, f"{page.relative_to(ROOT)} line {block.line}: " + "; ".join(problems)


def test_the_checker_refuses_what_does_not_exist(database):
    assert _check(["pdrepro", "render", "--no-such-option"], database)
    assert _check(["pdrepro", "check", "RUN", "[--scenario", "S]"], database)
    assert _check(["make", "no-such-target"], database)
    assert _check(["make", "smoke", "NO_SUCH_VARIABLE=1"], database)
    assert _check(["sudo", "scripts/softroce.sh", "sideways"], database)
    assert _check(["bash", ".ci/docker-engine.sh", "--extra"], database)
    assert _check(["frobnicate"], database)
    assert _check(["kubectl", "apply", "-f", "deploy/k8s/99-nothing.yaml"], database)
    assert _check(["kubectl", "apply", "-f", "deploy/k8s/20-prefill.yaml"], database) is None
    assert _check(["make", "smoke", "SMOKE_ARGS=--repeats 3"], database) is None
    assert _check(["sudo", "scripts/softroce.sh", "up"], database) is None


def _copy(dest: Path) -> Path:
    """The repository's files as a fresh clone has them (no venv, results or build outputs)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.splitlines()
    for name in listed:
        src = ROOT / name
        if src.is_file() and not src.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


RUNS = _page_blocks("run")


def test_the_guide_runs_some_commands():
    assert len(RUNS) >= 4, "fewer than four blocks are tagged `run`: the guide's commands go untested"


@pytest.mark.parametrize(("page", "block"), RUNS, ids=[f"{p.name}:{b.line}" for p, b in RUNS])
def test_run_blocks_work_as_written(tmp_path, page, block):
    # Each block in a fresh copy, as a reader who starts at that page: no block leans on another's output.
    clone = _copy(tmp_path / "clone")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    started = time.monotonic()
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block.text], cwd=clone, env=env, capture_output=True,
                          text=True, timeout=RUN_BUDGET_S)
    where = f"{page.relative_to(ROOT)} line {block.line}"
    assert proc.returncode == 0, f"{where} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    assert "Traceback" not in proc.stderr, where
    assert time.monotonic() - started < BLOCK_BUDGET_S, f"{where}: too slow for make test"
