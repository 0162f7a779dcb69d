"""A tune for a cluster: every run of the grid rendered as its own SLURM job, and one job array over them.

Each run (the baseline's repeats and each setting) gets `pdrepro render --target slurm` of its setting's scenario
into RUN/<run>/job/ (a typed request the command builds), its run written into RUN/<run> (render's --run-dir), as
`pdrepro ab --render` does per arm. RUN/tune-array.sbatch (from templates/tune-array.sbatch.tmpl) is the job array:
task i runs run i's script. Nothing is started; `pdrepro tune --judge RUN` ranks the folders once the tasks ended.
`tune` renders every run's job in memory first (commands.render.check_jobs, after ``check`` here), so a bad input
is refused before this writes any.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from importlib.resources import files
from pathlib import Path
from string import Template

from ..core import advice, runfile
from ..core.errors import UserError
from ..core.safewrite import write_file
from ..launch.request import RenderRequest
from ..rundir import memberrecord

ARRAY = "tune-array.sbatch"
# The allocation each run's own script asks for, carried onto the array (its name and output are the array's).
_ALLOCATION = re.compile(r"^#SBATCH --(nodes|ntasks-per-node|exclusive|time|gres)\b.*$", re.M)


class _At(Template):
    delimiter = "@"


def _template() -> _At:
    return _At(files("pdrepro.tune").joinpath("templates").joinpath("tune-array.sbatch.tmpl").read_text())


def check(out: Path, runs: Sequence[str], stack_words: Sequence[str]) -> None:
    """What the tune's own options may not do to its jobs, before any is rendered: ``runs``, the run folders."""
    for word in stack_words:
        if word.split("=", 1)[0] in ("--run-dir", "--out", "--target"):
            raise UserError(f"--stack-args: {word.split('=', 1)[0]} is set per run by `pdrepro tune --render`; "
                            "leave it out")
    for name in runs:  # a run's folder planted as a link: its job would be written wherever it points
        why = memberrecord.folder_problem(out, name)
        if why is not None:
            raise UserError(f"run {name}: {why}; move it away and rerun")


def render(out: Path, scenario_name: str, runs: Sequence[tuple[str, RenderRequest]],
           stage: Callable[[RenderRequest], int]) -> int:
    """``runs``: (run folder name, the render of its setting's job into RUN/<run>/job), in array order; ``stage``
    renders one (commands.requests.run_render)."""
    check(out, [name for name, _ in runs], ())
    jobs: list[Path] = []
    for _name, request in runs:
        job = Path(request.out)
        status = stage(request)
        if status:
            return status
        scripts = sorted(job.glob("*.sbatch"))
        if len(scripts) != 1:
            raise UserError(f"{job}: `pdrepro render --target slurm` left {len(scripts)} sbatch scripts there, not "
                            "one; clear the folder and render again")
        jobs.append(scripts[0])
    # Read back through the one reader: the folder is the user's run, and a link planted there is refused.
    allocation = "\n".join(m.group(0) for m in _ALLOCATION.finditer(runfile.read_text(jobs[0])))
    text = _template().substitute(
        title=f"pdrepro tune: scenario {scenario_name}, {len(runs)} runs as one SLURM job array",
        job_name=f"pdrepro-tune-{scenario_name}", last=str(len(runs) - 1), allocation=allocation,
        run=shlex.quote(str(out)), runs=" ".join(shlex.quote(n) for n, _ in runs),
        jobs=" ".join(shlex.quote(str(j)) for j in jobs))
    write_file(out / ARRAY, text, "pdrepro tune", out, mode=0o755)
    print(f"tune: one job per run in {out}/<run>/job/ and the array {out / ARRAY} over them ({len(runs)} tasks); "
          f"nothing started. From the bundle's checkout, with {out} on the filesystem the nodes share:\n"
          f"  sbatch {out / ARRAY}\nwhen every task has ended: {advice.judge('tune', out)}")
    return 0
