"""Members of a run of arms built as the commands build them (commands.requests), and stages that record what they
are handed: a test gives the runner typed requests and reads back which stage got which folder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pdrepro.commands.requests import stack_request, sweep_request
from pdrepro.member import MemberRequest
from pdrepro.stages import Stages


def member(run: Path, name: str, stack: Sequence[str], sweep: Sequence[str], **kw) -> MemberRequest:
    """A member whose `stack up` and sweep are the given words, read by each stage's own parser."""
    return MemberRequest(name=name, stack=stack_request(stack, out=run / name, given="the arm's stack"),
                         sweep=sweep_request(sweep, out=run / name, given="the arm's sweep"), **kw)


def plain(run: Path, name: str, scenario: str = "s", **kw) -> MemberRequest:
    return member(run, name, ["--scenario", scenario], ["--scenario", scenario, "--model-path", "/m",
                                                        "--dataset-path", "/d.json"], **kw)


def recording(calls: list[tuple[str, Path]], status: int = 0) -> Stages:
    """Stages that note (stage, folder) and end with ``status``, starting nothing."""
    def stage(name: str):
        def run(request) -> int:
            calls.append((name, Path(getattr(request, "out", None) or request.run)))
            return status
        return run
    return Stages(stack_up=stage("stack up"), sweep=stage("sweep"), stack_down=stage("stack down"),
                  analyze=stage("analyze"))


def flag_groups(words) -> list[list[str]]:
    """Words as flag groups, the way a person reads a command line: a switch, ``--flag value`` or ``--flag=value``
    (a word not starting with ``--`` belongs to the flag before it)."""
    out: list[list[str]] = []
    for word in words:
        if word.startswith("--") or not out:
            out.append([word])
        else:
            out[-1].append(word)
    return out
