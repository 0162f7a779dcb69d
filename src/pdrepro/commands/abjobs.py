"""`pdrepro ab --render TARGET`: the A/B for a cluster, one job per arm, each writing its run into RUN/<arm>.

Each arm's job is `pdrepro render --target TARGET` of the arm's scenario into RUN/<arm>/job/, with render's
--run-dir set to RUN/<arm>, where `ab --judge RUN` reads it; NEXT.txt beside it says how to run it. Every arm's
render is first made in memory (render.check_jobs), so a bad input is refused in one line before any job is
written. The A/B's own part (its arms, their scenarios, the arms state) stays in commands/ab.py; this module
declares no command of its own (``register`` adds nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import advice
from ..core.errors import UserError
from ..core.safewrite import write_file
from .render import check_jobs
from .requests import render_request, run_render

if TYPE_CHECKING:
    from ..launch.request import RenderRequest
    from ..scenario.model import Scenario

NEXT = "NEXT.txt"  # in each arm's job folder: how to run it so that --judge finds its run
# The targets whose job writes its run where it is told (render's --run-dir): a cluster's scheduler's.
TARGETS = ("slurm", "k8s")


def register(sub) -> None:
    """No command: `pdrepro ab --render` writes these jobs."""


def check_target(target: str) -> None:
    if target not in TARGETS:
        raise UserError(f"--render {target}: give {' or '.join(TARGETS)} (a cluster's scheduler runs each arm's job, "
                        "which writes its run into RUN/<arm>); on one box, drop --render and the A/B runs its arms")


def check_words(target: str, stack_words: tuple[str, ...]) -> None:
    """--stack-args may not set what each arm's job sets for itself."""
    for word in stack_words:
        if word.split("=", 1)[0] in ("--run-dir", "--out") or (target == "k8s" and word.startswith("--namespace")):
            raise UserError(f"--stack-args: {word.split('=', 1)[0]} is set per arm by `pdrepro ab --render`; leave it "
                            "out")


def _request(target: str, out: Path, arm: str, scenario: str, site: dict, stack_words: tuple[str, ...]
             ) -> RenderRequest:
    # The job's run is the arm's folder itself (RUN/<arm>), where `--judge` reads it; on Kubernetes each arm gets
    # its own namespace, so its claim (server logs appended per pod) is not the other arm's.
    own = {"namespace": namespace(arm)} if target == "k8s" else {}
    return render_request(stack_words, target=target, scenario=scenario, **site, **own, run_dir=str(out / arm),
                          out=str(out / arm / "job"))


def check(target: str, out: Path, variants: Mapping[str, Scenario], site: dict,
          stack_words: tuple[str, ...]) -> None:
    """Every arm's job rendered in memory, none written: a bad input is one line naming the arm."""
    check_jobs([(f"arm {arm}", scenario, partial(_request, target, out, arm, site=site, stack_words=stack_words))
                for arm, scenario in variants.items()])


def write(target: str, out: Path, paths: Mapping[str, Path], site: dict, stack_words: tuple[str, ...]) -> int:
    """Each arm's job (its scenario file in ``paths``) and its NEXT.txt; then what to run, on standard output."""
    steps: list[str] = []
    for arm, scenario in paths.items():
        status = run_render(_request(target, out, arm, str(scenario), site, stack_words))
        if status:
            return status
        steps.append(next_step(target, out, arm))
        write_file(out / arm / "job" / NEXT, f"{steps[-1]}\nwhen every arm's job is done: {advice.judge('ab', out)}\n",
                   "pdrepro ab", out)
    print(f"ab: one job per arm in {out}/<backend>/job/ (its scenario in {out}/scenarios/); each writes its run into "
          f"{out}/<backend>, where the judging reads it. Run the arms one after the other:")
    for line in steps:
        print(f"  {line}")
    print(f"then: {advice.judge('ab', out)}")
    return 0


def namespace(arm: str) -> str:
    """An arm's Kubernetes namespace: a DNS label, so the arm name's '_' and '.' become '-'."""
    return "pdrepro-" + arm.lower().replace("_", "-").replace(".", "-")


def next_step(target: str, out: Path, arm: str) -> str:
    """What runs the arm's job so that its run lands in RUN/<arm> (in NEXT.txt and the closing message)."""
    job = out / arm / "job"
    if target == "slurm":
        return (f"{arm}: from the bundle's checkout, with {out} on the filesystem the nodes share: "
                f"sbatch {job}/*.sbatch; wait for it to end (its run: {out / arm})")
    if target == "k8s":
        return (f"{arm}: the steps in {job}/steps.txt (namespace {namespace(arm)}); the Job writes its run into "
                f"{out / arm} in its pod, which is runs/{out.name}/{arm} on the namespace's shared claim: copy that "
                f"folder to {out / arm} here (or mount it there); then free the GPUs for the next arm, keeping the "
                f"claim: kubectl -n {namespace(arm)} delete statefulset,deployment,job -l app.kubernetes.io/name=pdrepro")
    return f"{arm}: run the job in {job} with its run written into {out / arm}"
