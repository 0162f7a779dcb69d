"""Server flags spelled every way SGLang's parser takes them: each owned flag's aliases, every unique prefix of
each (argparse's abbreviations), its letters' case changed, `--flag=value` or `--flag value`, mixed among flags
the plan leaves alone; and those other flags, spelled the same ways.

The oracle is argparse itself: a parser built from the generated option list (every field's option strings,
abbreviations on, as the pinned server's parser) reads the words, so what the server would set is decided
without the bundle's resolver. The promise: a spelling that sets a field the launch plan owns, or that the
server's parser would refuse (ambiguous, unknown), is refused by every guard (the scenario's
launch.extra_server_args, --server-arg through the launch plan, a tune grid) with one line naming it; a
spelling of a flag the plan leaves alone passes each of them. Before, only the exact spelling of an owned flag
was refused: --tensor-parallel-size, --disaggregation-mod or --model reached the servers."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import tempfile
from pathlib import Path

from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pdrepro.commands import run_command
from pdrepro.core.errors import UserError
from pdrepro.launch import plan as launch
from pdrepro.scenario import serverflags
from pdrepro.scenario.model import load_scenario, scenario_from_dict

EXAMPLES_SEED = 30  # the seeded count; the deep profile runs ten times it (depth.examples)
ENGINE = "sglang"
TABLE = serverflags.table(ENGINE)
assert TABLE is not None
OPTIONS = {o: d for tree in TABLE.trees for o, d in tree.options.items()}
OWNED = serverflags.plan_owned(ENGINE)
GRID_OWNED = serverflags.plan_owned(ENGINE, conditional=True)
SCENARIO = load_scenario("onebox-qwen25-0.5b")


def _server_parser() -> argparse.ArgumentParser:
    """The server's parser as far as spellings go: every option string of every field, abbreviations on."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=all(t.allow_abbrev for t in TABLE.trees))
    by_dest: dict[str, list[str]] = {}
    for option, dest in OPTIONS.items():
        by_dest.setdefault(dest, []).append(option)
    for dest, options in by_dest.items():
        parser.add_argument(*sorted(options), dest=dest, nargs="?", const="(set)", default=None)
    return parser


SERVER = _server_parser()


def server_reads(words: list[str]) -> set[str] | None:
    """The fields the server's parser sets from ``words``; None where it stops (ambiguous or unknown words)."""
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            found, rest = SERVER.parse_known_args(words)
    except SystemExit:
        return None
    if rest:
        return None
    return {dest for dest, value in vars(found).items() if value is not None}


def _unique_prefixes(option: str) -> list[str]:
    """Each prefix of ``option`` (after its dashes) that argparse expands to this option's field alone."""
    out = []
    for cut in range(3, len(option)):
        prefix = option[:cut]
        if {OPTIONS[o] for o in OPTIONS if o.startswith(prefix)} == {OPTIONS[option]}:
            out.append(prefix)
    return out


@st.composite
def spelling(draw, dests: list[str]) -> str:
    """One spelling of one of ``dests``: an option string, an abbreviation of one, maybe with a letter's case
    changed (a flag the server does not know)."""
    dest = draw(st.sampled_from(dests))
    option = draw(st.sampled_from(sorted(o for o, d in OPTIONS.items() if d == dest and o.startswith("--"))))
    prefixes = _unique_prefixes(option)
    word = draw(st.sampled_from([option, *prefixes])) if prefixes else option
    if draw(st.integers(0, 5)) == 0:
        at = draw(st.integers(2, len(word) - 1))
        word = word[:at] + word[at].upper() + word[at + 1:]
    return word


def words_of(flag: str, value: str, joined: bool) -> list[str]:
    return [f"{flag}={value}"] if joined else [flag, value]


OWNED_DESTS = sorted(OWNED)
FREE_DESTS = sorted(d for d in set(OPTIONS.values()) if d not in GRID_OWNED and d != "help")


def _grid(flag: str) -> tuple[int, str]:
    err = io.StringIO()
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(err), \
            contextlib.redirect_stdout(io.StringIO()):
        rc = run_command(["tune", f"--grid={flag}=1,2", "--out", str(Path(tmp) / "run")])
        assert os.listdir(tmp) == []
    return rc, err.getvalue().strip()


def _plan(extra: list[str]) -> None:
    site = launch.Site(prefill_hosts=("127.0.0.1",), decode_hosts=("127.0.0.1",), model_path="/m",
                       dataset_path="/d", ib_devices_file=None, gpus=(0, 1), image="unused",
                       extra_server_args=tuple(extra))
    launch.Plan(SCENARIO, site)


def _scenario(extra: list[str]) -> None:
    data = SCENARIO.to_dict()
    data["launch"]["extra_server_args"] = extra
    scenario_from_dict(data, "scenario under test")


@settings(max_examples=examples(EXAMPLES_SEED))
@given(flag=spelling(OWNED_DESTS), value=st.sampled_from(["2", "decode", "/elsewhere", "-1"]), joined=st.booleans(),
       free=st.lists(spelling(FREE_DESTS).filter(lambda w: server_reads([w]) is not None), max_size=2))
def test_an_owned_flag_is_refused_under_every_spelling(flag, value, joined, free):
    words = [*free, *words_of(flag, value, joined)]
    read = server_reads(words)
    # The oracle agrees that the server would take an owned field from these words, or stop on them.
    assert read is None or read & set(OWNED), (words, read)
    for guard in (_plan, _scenario):
        try:
            guard(words)
        except UserError as exc:
            assert flag.split("=")[0] in str(exc) and "\n" not in str(exc), str(exc)
        else:
            raise AssertionError(f"{guard.__name__} took {words}")


@settings(max_examples=examples(EXAMPLES_SEED))
@given(flag=spelling(OWNED_DESTS))
def test_a_grid_of_an_owned_flag_is_refused_on_one_line(flag):
    rc, err = _grid(flag)
    assert rc == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err


@settings(max_examples=examples(EXAMPLES_SEED))
@given(words=st.lists(spelling(FREE_DESTS), min_size=1, max_size=3))
def test_a_flag_the_plan_leaves_alone_passes_exactly_when_the_server_takes_it(words):
    read = server_reads(words)
    for guard in (_plan, _scenario):
        try:
            guard(words)
            taken = True
        except UserError as exc:
            assert "\n" not in str(exc)
            taken = False
        # Taken when the server's parser reads the words; refused (one line) when it would stop on them.
        assert taken == (read is not None), (guard.__name__, words, read)
