"""The stages of a runner and the typed requests they take (issue 33 item 3): each stage is handed a request
(launch.stack.request, sweep.request, rundir.request), not a word list rebuilt from words.

The builders are the edge where a composite command's options become requests, once, before any member starts:
``stack_request`` and ``sweep_request`` take the fields the command sets, typed, and the words a person gave
(``--stack-args``, ``--sweep-args``) read once by the stage's own parser over them, so each flag means what it
means on the command line (and, as there, a flag given later wins). A member's sweep is left without its endpoints
(``router`` empty): the arms runner sets them from the stack that member's stack up recorded.
The stages run each command's own function in this process with the CLI's error handling (one line and exit 2 for
bad input, 128 + N for a signal): ``STAGES`` (pdrepro.stages) for the arms runner, ``JUDGING`` for the runners
that analyse and judge a run, ``REPRODUCTION`` for `pdrepro repro`'s pipeline (whose whole sweep, endpoints and
all, ``pipeline_sweep_request`` builds). This module declares no command of its own (``register`` adds nothing).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from ..core.errors import UserError
from ..stages import Judging, Reproduction, Stages
from ..sweep.request import SweepRequest

if TYPE_CHECKING:
    from ..fabric.request import DoctorRequest, PairRequest
    from ..launch.request import RenderRequest
    from ..launch.stack.request import StackDownRequest, StackUpRequest
    from ..member import MemberRequest
    from ..rundir.request import AnalyzeRequest, CheckRequest

# What a runner sets on a member's sweep itself: the endpoints its stack recorded, the run folder and the
# configuration the command names; a person's words may not set them again.
RUNNER_SWEEP_FIELDS = ("router", "prefill", "decode", "worker", "out", "configuration")


def register(sub) -> None:
    """No command: the stages of the runners."""


class WordsRefused(UserError):
    """Words a stage's parser would not take: ``why`` is the parser's complaint alone, so a reader of recorded words
    (commands.memberwords) can give its own fix."""

    def __init__(self, message: str, why: str) -> None:
        super().__init__(message)
        self.why = why


class _Refusing(argparse.ArgumentParser):
    """A stage's parser whose complaints become one line naming the option the words came from."""

    given = "the words"

    def error(self, message: str) -> NoReturn:
        raise WordsRefused(f"{self.given}: {message}; give flags `{self.prog}` takes", message)


def _parser(register_command: Callable, *names: str, given: str) -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser of the command ``names`` spell (``"stack", "up"``) as that command declares it, and its required
    options' names. None is required of the words: the typed fields stand for them."""
    parser = _Refusing(prog="pdrepro", add_help=False)
    register_command(parser.add_subparsers(dest="command"))
    for name in names:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    parser.given = given
    required = [a.dest for a in parser._actions if a.required]
    for option in parser._actions:
        option.required = False
    return parser, required


def _read(parser: argparse.ArgumentParser, required: list[str], words: Sequence[str], fields: dict,
          owned: dict, given: str, missing_fix: str = "") -> dict:
    """``words`` read over ``fields`` (a field the words name is theirs, as a later flag wins on a command line),
    refusing words that set an ``owned`` field (the runner's), which is then set; the values, by field."""
    unset: dict[str, object] = {name: [] if isinstance(value, (list, tuple)) else None for name, value in owned.items()}
    read = vars(parser.parse_args(list(words), namespace=argparse.Namespace(**fields, **unset)))
    for name, empty in unset.items():
        if read.get(name) != empty:
            why = f"sets --{name.replace('_', '-')}, which the runner sets on each member itself"
            raise WordsRefused(f"{given} {why}; leave it out", why)
    read.update(owned)
    missing = [name for name in required if read.get(name) is None]
    if missing:
        flag = "--" + missing[0].replace("_", "-")
        why = f"no {flag}"
        raise WordsRefused(missing_fix.format(flag=flag) if missing_fix else f"{given}: {why}; give it", why)
    return read


def stack_request(words: Sequence[str] = (), *, out: Path, given: str = "--stack-args", **fields) -> StackUpRequest:
    """A member's `stack up` into ``out``: ``fields`` (scenario, the site options, ...) and ``words`` over them."""
    from ..launch.stack.request import StackUpRequest
    from . import stack as command

    parser, required = _parser(command.register, "stack", "up", given=given)
    fields = {**fields, "server_arg": list(fields.get("server_arg", ()))}
    read = _read(parser, required, words, fields, {"out": Path(out)}, given)
    return StackUpRequest.from_args(argparse.Namespace(**read))


def sweep_request(words: Sequence[str] = (), *, out: Path, configuration: str | None = None,
                  given: str = "--sweep-args", **fields) -> SweepRequest:
    """A member's sweep into ``out`` without its endpoints (``router`` empty: the runner sets them from the stack
    the member's stack up recorded): ``fields`` (scenario, model_path, ...) and ``words`` over them."""
    from . import sweep as command

    parser, required = _parser(command.register, "sweep", given=given)
    owned: dict[str, object] = {"out": Path(out), "configuration": configuration, "router": "", "prefill": None, "decode": None,
             "worker": []}
    read = _read(parser, required, words, fields, owned, given)
    return SweepRequest.from_args(argparse.Namespace(**read))


def pipeline_sweep_request(words: Sequence[str] = (), *, given: str = "--sweep-args",
                           missing_fix: str = "", **fields) -> SweepRequest:
    """The reproduction pipeline's whole sweep (its endpoints and run folder among ``fields``, as `pdrepro repro` or
    the gate suite's options set them) with ``words`` read over them, as a later flag wins on a command line; the
    pipeline refuses words that set its own flags before it asks (pipeline.sweep_extra). ``missing_fix``: the
    message for a required field left unset, ``{flag}`` its option."""
    from . import sweep as command

    parser, required = _parser(command.register, "sweep", given=given)
    return SweepRequest.from_args(argparse.Namespace(**_read(parser, required, words, fields, {}, given, missing_fix)))


def render_request(words: Sequence[str] = (), *, given: str = "--stack-args", **fields) -> RenderRequest:
    """A member's job for a cluster: ``fields`` (target, scenario, the site options, run_dir, out) and ``words``
    over them (the runner refuses words that set what it sets per member before it asks)."""
    from ..launch.request import RenderRequest
    from . import render as command

    parser, required = _parser(command.register, "render", given=given)
    fields = {**fields, "server_arg": list(fields.get("server_arg", ()))}
    return RenderRequest.from_args(argparse.Namespace(**_read(parser, required, words, fields, {}, given)))


def member_request(words: Sequence[str], *, out: Path, router: str, prefill: str | None = None,
                   decode: str | None = None, workers: Sequence[str] = (), configuration: str | None = None,
                   ) -> SweepRequest:
    """A sweep from its words and the endpoints, as the same command line would make it."""
    return dataclasses.replace(sweep_request(words, out=out, configuration=configuration, given="the sweep's words"),
                               router=router, prefill=prefill, decode=decode, worker=tuple(workers))


def _guarded(command: str, name: str, attribute: str = "run") -> Callable:
    """The stage running ``commands.<name>.<attribute>`` on its request, with the CLI's error handling."""
    import importlib

    def stage(request) -> int:
        from . import run_guarded

        module = importlib.import_module(f"{__package__}.{name}")
        # Looked up at the call: one module's function, whatever a test put in its place.
        return run_guarded(command, getattr(module, attribute), request)

    return stage


_stack_up: Callable[[StackUpRequest], int] = _guarded("stack", "stack", "run_up")
_stack_down: Callable[[StackDownRequest], int] = _guarded("stack", "stack", "run_down")
run_sweep: Callable[[SweepRequest], int] = _guarded("sweep", "sweep")
run_analyze: Callable[[AnalyzeRequest], int] = _guarded("analyze", "analyze")
run_check: Callable[[CheckRequest], int] = _guarded("check", "check")
run_render: Callable[[RenderRequest], int] = _guarded("render", "render")
# One doctor stage for both requests: the command tells a pair check from a node's checks by the request's type.
run_doctor: Callable[[DoctorRequest | PairRequest], int] = _guarded("doctor", "doctor")

STAGES = Stages(stack_up=_stack_up, sweep=run_sweep, stack_down=_stack_down, analyze=run_analyze)
JUDGING = Judging(analyze=run_analyze, check=run_check)
REPRODUCTION = Reproduction(doctor=run_doctor, pair=run_doctor, sweep=run_sweep, judging=JUDGING)


def member(run: Path, name: str, *, stack: dict, sweep: dict, stack_words: Sequence[str] = (),
           sweep_words: Sequence[str] = (), backend: str | None = None, configuration: str | None = None,
           ) -> MemberRequest:
    """One member of a composite run on this host, as the arms runner takes it: its stack into RUN/<name>, its sweep
    there (a configuration's into RUN), run in place with the servers' logs read from the member's own folder."""
    from ..member import MemberRequest

    folder = run / name
    sweep = {"bench_in_place": True, "logs_from": str(folder / "logs"), **sweep}
    return MemberRequest(name=name, backend=backend, configuration=configuration,
                         stack=stack_request(stack_words, out=folder, **stack),
                         sweep=sweep_request(sweep_words, out=run if configuration else folder,
                                             configuration=configuration, **sweep))
