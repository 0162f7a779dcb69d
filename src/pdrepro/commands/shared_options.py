"""The options the commands that run several members share, declared once (issue 34 item 6).

`ab`, `tune` and `compare` start a stack per member and sweep it; `load` measures a running stack. The same thing
has the same option on each, with the same name, help and type: ``--model``, ``--dataset``, ``--gpus``,
``--transfer-backend`` and ``--force-tcp``, ``--out``, ``--prompt-lens``. An older spelling stays an alias that
prints one line naming the new one (``Renamed``), so a command line that worked keeps working and says what to
write next time. This module declares no command of its own (``register`` adds nothing); it sits in `commands/`
because the option choices read the registries (backends) and it is used by the commands alone.

``check_inputs`` is the other half of one grammar: every input the members share is checked before the first
member starts (the model folder, the dataset, the serving packages this Python imports), one line naming the
input and the fix, exit 2, nothing started or written; without it a wrong --model started every arm. `load`
asks it too, for the model folder and the dataset its bench client reads (it starts no stack: no packages).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Iterable
from pathlib import Path

from .. import backends, engines
from ..core.cliargs import prompt_lens
from ..core.errors import UserError

# What --force-tcp stands for: the backend that moves KV over TCP only.
TCP_BACKEND = next(n for n in backends.names() if backends.backend(n).tcp_only)

MODEL_HELP = ("model folder (it holds config.json and the weights): the servers load it, the bench client reads its "
              "tokenizer; checked before anything starts")
DATASET_HELP = "ShareGPT JSON the bench client draws its prompts from; checked before anything starts"
GPUS_HOST_HELP = "GPU ids of this host, comma-separated (default 0..TP-1; one GPU: the servers share it)"
PROMPT_LENS_HELP = ("prompt lengths in tokens, comma-separated, each one of the scenario's sweep.prompt_lens "
                    "(default: all of them): the run measures these only, records them and is judged by them")


# The site options of a command that starts a stack per member (`ab`, `tune`), passed to `stack up` (and `render`):
# the shared ones above and these (flag, help).
SHARED_SITE = ("--model", "--dataset", "--gpus")
SITE = (("--prefill-ip", "the prefill node's address the servers advertise"),
        ("--decode-ip", "a cluster: the decode node's address (`render` only)"))
# Taken by `render` only: the one-box host launcher runs both servers on this host.
RENDER_ONLY = ("--decode-ip",)


def register(sub) -> None:
    """No command: the options here are declared on the commands that take them."""


class Renamed(argparse.Action):
    """An option with an older spelling: given under an old one, it stores as the new one does and prints one line
    naming the new spelling (``old`` lists the old spellings among the option strings)."""

    def __init__(self, option_strings, dest, old: tuple[str, ...] = (), store_true: bool = False, **kwargs):
        if store_true:
            kwargs.update(nargs=0, default=kwargs.get("default", False))
        super().__init__(option_strings, dest, **kwargs)
        self.old, self.store_true = old, store_true

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string in self.old:
            note(parser.prog, option_string, self.option_strings[0])
        setattr(namespace, self.dest, True if self.store_true else values)


def note(prog: str, old: str, new: str) -> None:
    """One line on standard error: the old spelling still works, the new one is what to write."""
    print(f"{prog}: note: {old} is now spelt {new} (the old spelling still works)", file=sys.stderr, flush=True)


def add_model(p, *old: str, required: bool = False, dest: str = "model", help: str = MODEL_HELP) -> None:
    p.add_argument("--model", *old, dest=dest, action=Renamed, old=old, metavar="DIR", required=required, help=help)


def add_dataset(p, *old: str, required: bool = False, dest: str = "dataset", help: str = DATASET_HELP) -> None:
    p.add_argument("--dataset", *old, dest=dest, action=Renamed, old=old, metavar="FILE", required=required,
                   help=help)


def add_gpus(p, host: bool) -> None:
    """``host``: the servers are processes of this host (the host launcher); else a render's compose files."""
    p.add_argument("--gpus", metavar="IDS", help=GPUS_HOST_HELP if host else
                   "compose: GPU ids per node, comma-separated (default 0..TP-1; servers sharing a node split them)")


def add_transport(p) -> None:
    """``--transfer-backend NAME`` and its short form ``--force-tcp``; ``transfer_backend(args)`` reads them."""
    p.add_argument("--transfer-backend", choices=backends.names(), metavar="NAME",
                   help="the KV transfer backend the servers run, overriding the scenario's launch.transfer_backend: "
                        + ", ".join(f"{n} ({backends.backend(n).label})" for n in backends.names()))
    p.add_argument("--force-tcp", action="store_true",
                   help=f"one box: the same as --transfer-backend {TCP_BACKEND} (KV over TCP only, also with RDMA "
                        "devices present)")


def add_out(p, required: bool = False) -> None:
    p.add_argument("--out", type=Path, metavar="RUN", required=required,
                   help="the run folder: each member in RUN/<member>, the command's own outputs beside them (created; "
                        "reused to resume)")


def add_prompt_lens(p, *old: str, help: str = PROMPT_LENS_HELP, dest: str = "prompt_lens",
                    metavar: str = "L1,L2") -> None:
    p.add_argument("--prompt-lens", *old, dest=dest, action=Renamed, old=old, metavar=metavar, help=help)


def add_member_options(p) -> None:
    """The options of a command that starts a stack per member on this host (`ab`, `tune`, `compare`)."""
    add_out(p)
    add_model(p)
    add_dataset(p)
    add_gpus(p, host=True)
    add_transport(p)
    add_prompt_lens(p)


def transfer_backend(args) -> str | None:
    """The site's backend from --transfer-backend and its alias --force-tcp (one setting); None keeps the
    scenario's launch.transfer_backend."""
    chosen = getattr(args, "transfer_backend", None)
    if getattr(args, "force_tcp", False):
        if chosen not in (None, TCP_BACKEND):
            raise UserError(f"--force-tcp and --transfer-backend {chosen}: --force-tcp means --transfer-backend "
                            f"{TCP_BACKEND}; give one of them")
        return TCP_BACKEND
    return chosen


def tcp_option(args) -> str | None:
    """The option that asked for a TCP-only backend, as the person spelt it (None: none did): a cluster job refuses
    it by that name (TCP is the one-box fallback; a cluster moves KV over its RDMA fabric)."""
    chosen = transfer_backend(args)
    if chosen is None or not backends.backend(chosen).tcp_only:
        return None
    return "--force-tcp" if getattr(args, "force_tcp", False) else f"--transfer-backend {chosen}"


def cluster_job_inputs(args, out: Path, render: str) -> None:
    """What a cluster job cannot take, refused in the command's own words before any job is rendered: KV over TCP
    (a cluster moves it over its RDMA fabric; TCP is the one-box fallback) and a run folder the job's shell and a
    Kubernetes mount cannot carry as written (`render --run-dir`'s rule, named here as --out)."""
    from ..launch.request import cluster_run_dir_problem

    option = tcp_option(args)
    if option is not None:
        raise UserError(f"{option}: a cluster job ({render}) moves KV over the nodes' RDMA fabric, TCP only on one "
                        f"box; drop {option} or {render}")
    problem = cluster_run_dir_problem(str(out / "member"))
    if problem:
        raise UserError(f"--out {str(out)!r}: {problem}")


def stack_args(args, prog: str) -> tuple[str, ...]:
    """--stack-args as words, the older spelling of the transport taken out of them: ``--stack-args='--force-tcp'``
    sets --force-tcp (with a note naming it), so the transport is one setting the command reads, whichever route
    gave it. A backend given both ways, differently, is refused with both places named."""
    from ..pipeline import split_words

    words = list(split_words(getattr(args, "stack_args", None), "--stack-args"))
    if "--force-tcp" in words:
        note(prog, "--stack-args='--force-tcp'", "--force-tcp")
        words = [w for w in words if w != "--force-tcp"]
        args.force_tcp = True
        args.stack_args = shlex.join(words)  # read once: a second reading gives no second note
    given = [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--transfer-backend"]
    given += [w.split("=", 1)[1] for w in words if w.startswith("--transfer-backend=")]
    chosen = transfer_backend(args)
    if chosen is not None and any(g != chosen for g in given):
        option = "--force-tcp" if args.force_tcp else f"--transfer-backend {chosen}"
        raise UserError(f"--stack-args' --transfer-backend {given[0]} and {option}: two backends; give it once, as "
                        "--transfer-backend NAME")
    return tuple(words)


def transport_words(args) -> list[str]:
    """The transport the command was given, as `stack up` takes it (none: the scenario's)."""
    chosen = transfer_backend(args)
    return [] if chosen is None else ["--transfer-backend", chosen]


def narrow(args, scenario):
    """``scenario`` narrowed to the lengths --prompt-lens picks (scenario.narrow), or as it is."""
    given = getattr(args, "prompt_lens", None)
    if given is None:
        return scenario
    from ..scenario.narrow import narrowed

    return narrowed(scenario, prompt_lens(given))


def sweep_args(args, prog: str) -> tuple[str, ...]:
    """--sweep-args as words; --prompt-lens among them is refused: the command narrows its members' scenarios
    itself (so each member records the lengths it runs), a sweep narrowed behind its back would not match them."""
    from ..pipeline import split_words

    words = split_words(getattr(args, "sweep_args", None), "--sweep-args")
    if any(w.split("=", 1)[0] == "--prompt-lens" for w in words):
        raise UserError(f"--sweep-args sets --prompt-lens: give it to `{prog}` itself (--prompt-lens L1,L2), which "
                        "narrows every member's scenario to those lengths")
    return words


def lens_field(args) -> str | None:
    """--prompt-lens as a member's sweep request holds it (None: the scenario's every length)."""
    given = getattr(args, "prompt_lens", None)
    return None if given is None else ",".join(map(str, prompt_lens(given)))


# --- every shared input checked before any member starts ---------------------------------------------------------

def check_model(given: str | os.PathLike, option: str = "--model") -> str:
    """The model folder as an absolute path, or one line naming it and the fix."""
    model = Path(given).expanduser()
    if not model.is_dir():
        raise UserError(f"{option} {given}: no such folder; give the model's folder (the one holding config.json and "
                        "the weights)")
    if not (model / "config.json").is_file():
        raise UserError(f"{option} {given}: no config.json there; give the model's folder (the one holding "
                        "config.json and the weights)")
    return str(model.absolute())


def check_dataset(given: str | os.PathLike, option: str = "--dataset") -> str:
    path = Path(given).expanduser()
    if not path.is_file():
        raise UserError(f"{option} {given}: no such file; give the ShareGPT JSON file "
                        "(ShareGPT_V3_unfiltered_cleaned_split.json, or the one `pdrepro offline-model` writes)")
    return str(path.absolute())


def check_packages(command: str, engine: str, backend_names: Iterable[str]) -> None:
    """The serving packages every member's stack imports (the engine's server and router, each backend's), asked
    of this Python as `stack up` asks it, once per backend, before any member starts; one line naming what is
    missing and the environment that has it."""
    from ..launch.stack.packages import probe

    for name in dict.fromkeys(backend_names):
        try:
            probe(sys.executable, dict(os.environ), engines.engine(engine), backends.backend(name))
        except UserError as exc:
            raise UserError(f"{command} runs its members' servers with this Python, and {exc}") from None


def check_inputs(command: str, *, model: str | None, dataset: str | None, engine: str | None = None,
                 backend_names: Iterable[str] = ()) -> tuple[str, str]:
    """Every input the members share, checked before any starts: (model, dataset) as absolute paths. ``engine``
    None: the command starts no stack (`load` measures one already up, whose servers found their packages), so
    no serving package is asked of this Python; the model folder and the dataset its bench client reads are."""
    if not (model and dataset):
        raise UserError("one box: give --model MODEL_DIR and --dataset SHAREGPT_JSON (the stack serves the model, "
                        "the sweep draws its prompts from the dataset)")
    paths = check_model(model), check_dataset(dataset)
    if engine is not None:
        check_packages(command, engine, backend_names)
    return paths


def site_fields(args, onebox: bool = True, paths: bool = True, render: str = "--render TARGET") -> dict:
    """The site options as fields of a member's `stack up` request (launch.stack.request; ``paths``: with the
    model's and dataset's, absolute), read once here for `stack up` and `render` alike."""
    fields: dict = {}
    for flag in (*SHARED_SITE, *(f for f, _ in SITE)):
        name, value = flag[2:].replace("-", "_"), getattr(args, flag[2:].replace("-", "_"))
        if value is not None and onebox and flag in RENDER_ONLY:
            raise UserError(f"{flag}: one box runs both servers on this host; drop it (or give {render})")
        if value is not None and (paths or flag not in ("--model", "--dataset")):
            fields[name] = str(Path(value).expanduser().absolute()) if flag in ("--model", "--dataset") else value
    return {**fields, "mem_fraction": args.mem_fraction, "server_arg": list(args.server_arg)}


def site_words(args, onebox: bool, paths: bool = True, render: str = "--render TARGET") -> list[str]:
    """The site options as `render` takes them (and a tune's label holds them)."""
    fields = site_fields(args, onebox, paths, render)
    mem, server = fields.pop("mem_fraction"), fields.pop("server_arg")
    words = [word for name, value in fields.items() for word in ("--" + name.replace("_", "-"), value)]
    return [*words, *(["--mem-fraction", f"{mem:g}"] if mem is not None else []), *(f"--server-arg={v}" for v in server)]
