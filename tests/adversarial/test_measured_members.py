"""Hostile member folders for the arms runner's "measured already" test (pdrepro.arms.measured), which decides
that a member stopped after its last length (or on a machine that went away) is judged rather than run again:
each length's bench file complete, missing, cut short, of another length, short of requests, appended twice,
generating nothing, a directory, a link to a complete file elsewhere, a FIFO; the member folder itself a link.

The promise: a member counts as measured only when its own folder holds a complete result of every length its
sweep's scenario asks for; anything else leaves it to be run (its sweep then resumes at the first length it
lacks, or refuses the file on one line); the test never raises, never hangs and writes nothing."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from memberhelp import plain

from pdrepro import arms
from pdrepro.scenario.model import load_scenario

EXAMPLES_SEED = 40  # the seeded count; the deep profile runs ten times it (depth.examples)
SCENARIO = "onebox-qwen25-0.5b"
SWEEP = load_scenario(SCENARIO).sweep
KINDS = ["complete", "missing", "cut", "other-length", "short", "twice", "nothing-generated", "directory",
         "link", "fifo"]


def _record(length: int, completed: int, output: int = 8) -> str:
    return json.dumps({"random_input_len": length, "completed": completed, "output_lens": [output] * completed})


def _write(path: Path, kind: str, length: int, elsewhere: Path) -> None:
    n = SWEEP.num_prompts
    if kind == "missing":
        return
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "link":
        target = elsewhere / f"result-{length}.jsonl"
        target.write_text(_record(length, n) + "\n")
        path.symlink_to(target)
    else:
        path.write_text({"complete": _record(length, n) + "\n", "cut": _record(length, n)[:20],
                         "other-length": _record(length + 1, n) + "\n", "short": _record(length, n - 1) + "\n",
                         "twice": (_record(length, n) + "\n") * 2,
                         "nothing-generated": _record(length, n, output=0) + "\n"}[kind])


def _tree(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink():
            out[str(p)] = "link:" + os.readlink(p)
        elif p.is_file():
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[str(p)] = "dir" if p.is_dir() else "other"
    return out


@settings(max_examples=examples(EXAMPLES_SEED))
@given(kinds=st.lists(st.sampled_from(KINDS), min_size=len(SWEEP.prompt_lens), max_size=len(SWEEP.prompt_lens)),
       folder_is_link=st.booleans())
def test_a_member_counts_as_measured_only_with_every_length_complete_in_its_own_folder(kinds, folder_is_link):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        run, elsewhere = root / "run", root / "elsewhere"
        run.mkdir()
        elsewhere.mkdir()
        real = elsewhere / "member" if folder_is_link else run / "m"
        (real / "bench").mkdir(parents=True)
        if folder_is_link:
            (run / "m").symlink_to(real)
        for length, kind in zip(SWEEP.prompt_lens, kinds):
            _write(real / "bench" / f"result-{length}.jsonl", kind, length, elsewhere)
        arm = plain(run, "m", SCENARIO)
        before = _tree(root)
        found = arms.measured(run, arm)
        assert _tree(root) == before, "judging whether a member is measured wrote into the run"
        whole = not folder_is_link and all(k == "complete" for k in kinds)
        assert (found is None) == whole, (kinds, folder_is_link, found)
        if found is not None:
            assert "\n" not in found and found.strip()
